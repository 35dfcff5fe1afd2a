// The shapes the server sends and the export embeds: the one vocabulary of the reader, the
// server and the page (the page imports these as types only).

/** A value read from a run's files, as JSON; long strings replaced by a {@link ClippedText}. */
export type RunValue = null | boolean | number | string | RunValue[] | { [key: string]: RunValue };

/** The key that marks a string the reader cut: `{ [CLIPPED_KEY]: head, omittedChars }`. */
export const CLIPPED_KEY = 'karotte:clipped';

/** How a run ended, or why the page cannot say. */
export type RunStatus = 'passed' | 'failed' | 'error' | 'running' | 'unreadable';

/** One row of the runs table: what a person scans first. */
export interface RunSummary {
  /** An opaque id (a hash of the run directory's path); never a path. */
  readonly id: string;
  /** The directory given on the command line that holds the run. */
  readonly root: string;
  /** The run's directory relative to `root` (`.` when the root is the run). */
  readonly name: string;
  readonly taskId: string | null;
  readonly agent: string | null;
  readonly status: RunStatus;
  readonly score: number | null;
  /** The misbehavior codes result.json lists, in order. */
  readonly misbehavior: readonly string[];
  /** Why it ended as it did, in a line (the error, the grader's failure, the first misbehavior, the judge's reason). */
  readonly reason: string | null;
  readonly turns: number | null;
  readonly durationMs: number | null;
  /** ISO time the run started. */
  readonly startedAt: string | null;
  /** What could not be read (a missing transcript, a malformed line); empty when all is well. */
  readonly problems: readonly string[];
  /** For a run of a red-team directory (named by a known attack's id, or `control`): the attack and its outcome. */
  readonly attack: AttackOutcome | null;
}

/** A red-team run's attack and how it ended, as `karotte redteam` reports it. */
export interface AttackOutcome {
  /** The attack's class (`custody-tricks`, `resource-exhaustion`, ...), or `control`. */
  readonly class: string;
  /** The stoppers the attack expects (misbehavior codes, `grader`, `graded`); null when any score of 0 will do. */
  readonly expected: readonly string[] | null;
  /** What stopped it: its misbehavior codes, else `grader` (the grader refused it) or `graded` (scored 0); empty when it was not stopped. */
  readonly stoppedBy: readonly string[];
  /** The control passed, or the attack scored 0 without `error`, stopped as it expects. */
  readonly asExpected: boolean;
}

/** The list of runs under the given directories. */
export interface RunList {
  readonly roots: readonly string[];
  readonly runs: readonly RunSummary[];
  /** Problems of the directories themselves (one that is missing, too many runs). */
  readonly problems: readonly string[];
}

/** One run's result and the count of its transcript's events. */
export interface RunDetail {
  readonly summary: RunSummary;
  /** result.json as read (long strings clipped); null when it is missing or unreadable. */
  readonly result: RunValue;
  /** How many transcript events were read. */
  readonly eventCount: number;
  /** True once the transcript holds `episode_ended`. */
  readonly ended: boolean;
}

/** A page of a run's transcript events. */
export interface EventPage {
  readonly offset: number;
  readonly total: number;
  readonly events: readonly RunValue[];
  readonly ended: boolean;
}

/** What the exported HTML file embeds: every run, and the first events of each. */
export interface ExportData {
  readonly generatedAt: string;
  readonly list: RunList;
  readonly details: Readonly<Record<string, { readonly detail: RunDetail; readonly events: EventPage }>>;
}
