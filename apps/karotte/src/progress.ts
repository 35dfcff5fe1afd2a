import type { EpisodeProgress, EpisodeResult } from '@karotte/core';
import { displaySafe, formatDuration, indentWrapped, shortenCommand, truncate } from './format.js';

/**
 * Whether `run` prints progress on stderr: `--progress` forces it, `--quiet` turns it off, and
 * otherwise only a person at a terminal gets it (stderr a TTY, and no `--json`). A caller that
 * pipes stderr and never reads it (a trainer reading only result.json) would block once the pipe
 * is full, and one that merges stderr into stdout would break its `--json` parse.
 */
export function progressWanted(
  flags: { readonly progress?: boolean; readonly quiet?: boolean; readonly json?: boolean },
  stderrIsTTY: boolean,
): boolean {
  if (flags.progress === true) return true;
  if (flags.quiet === true || flags.json === true) return false;
  return stderrIsTTY;
}

/**
 * Turns an episode's progress events into lines for a person watching (stderr): the sandbox,
 * each tool call as it starts (its command on one shortened line) and as it ends (exit code
 * and duration), then collect and grade. Lines fit `width`; `steps` > 1 names the step. Every
 * string the student, the replay or a grader chose (a tool name, a command, a note) is printed
 * through {@link displaySafe}.
 */
export function createProgressPrinter(
  write: (line: string) => void,
  options: { readonly width: number; readonly steps: number },
): (event: EpisodeProgress) => void {
  let calls = 0;
  const numbers = new Map<string, number>();
  const step = (index: number): string => (options.steps > 1 ? `step ${index + 1} ` : '');
  return (event) => {
    const line = formatProgress(event, {
      width: options.width,
      step,
      callNumber: (id, start) => {
        if (start) {
          calls += 1;
          numbers.set(id, calls);
        }
        return numbers.get(id) ?? calls;
      },
    });
    if (line !== null) write(`${truncate(line, options.width)}\n`);
  };
}

interface ProgressContext {
  readonly width: number;
  readonly step: (index: number) => string;
  /** The call's number in the episode, from 1 (`start`: a new call). */
  readonly callNumber: (toolCallId: string, start: boolean) => number;
}

/** One progress line for `event` (terminal-safe), or null when it is not worth a line. */
function formatProgress(event: EpisodeProgress, context: ProgressContext): string | null {
  switch (event.type) {
    case 'judges_checked':
    case 'model_call':
    case 'model_retry':
      return null;
    case 'sandbox_ready':
      return `[sandbox] ready: uid ${event.uid} (${formatDuration(event.durationMs)})`;
    case 'tool_call': {
      const label = `[${context.step(event.step)}call ${context.callNumber(event.toolCallId, true)}]`;
      if (event.command === null)
        return `${label} ${truncate(displaySafe(event.name), 64)} (not a well-formed bash call)`;
      const prefix = `${label} $ `;
      return `${prefix}${shortenCommand(event.command, context.width - prefix.length)}`;
    }
    case 'tool_result': {
      const label = `[${context.step(event.step)}call ${context.callNumber(event.toolCallId, false)}]`;
      const took = formatDuration(event.durationMs);
      if (event.timedOut) return `${label} timed out after ${took}, stopped (the shell goes on)`;
      const note = event.note === null ? null : displaySafe(event.note);
      if (event.exitCode === null) return `${label} not run: ${note ?? 'refused'}`;
      return `${label} exit ${event.exitCode} (${took}${note === null ? '' : `; ${note}`})`;
    }
    case 'collect':
      return `[${context.step(event.step)}collect] reaping the student's processes, taking custody of ${displaySafe(event.submission.join(', '))}`;
    case 'graded': {
      const judged = event.judgeMs === null ? 'not judged' : `grade ${formatDuration(event.judgeMs)}`;
      return `[${context.step(event.step)}grade] ${event.status} score=${event.score} (collect ${formatDuration(event.collectMs)}, ${judged})`;
    }
  }
}

/**
 * Text for {@link indentWrapped}: whitespace (line breaks, tabs, carriage returns) is where it
 * wraps anyway, so it becomes spaces; any other control or format character is escaped.
 */
function prose(text: string): string {
  return displaySafe(text.replace(/\s+/g, ' '));
}

type JudgeReport = NonNullable<EpisodeResult['steps'][number]['verdict']['judge']>;

/** The first `reason` (a string) in a judge's metadata, its children's included. */
function judgeReason(report: JudgeReport | null): string | undefined {
  if (report === null) return undefined;
  const own = report.metadata['reason'];
  if (typeof own === 'string' && own.trim() !== '') return own.trim();
  for (const child of report.children ?? []) {
    const found = judgeReason(child);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Why a run did not pass, as lines for a person (each `  why: …`, wrapped to `width`): the
 * misbehavior codes and messages, else the judge's reason (a grader's `metadata.reason`, or
 * its metadata) for the score it gave. Empty for a passed run and for `error` (whose code and
 * message the summary line already holds). Codes, messages and the grader's words are printed
 * through {@link displaySafe}.
 */
export function explainResult(result: EpisodeResult, width: number): string[] {
  if (result.status !== 'failed') return [];
  const lines: string[] = [];
  for (const m of result.misbehavior)
    lines.push(indentWrapped(prose(`${m.code}: ${m.message}`), width, '  why: '));
  if (lines.length > 0) return lines;
  const verdict = result.steps.at(-1)?.verdict;
  if (verdict === undefined) return [];
  const threshold = `needs ${verdict.passThreshold} to pass`;
  if (verdict.judge === null) return [`  why: the submission was not judged (${threshold})`];
  const reason = judgeReason(verdict.judge);
  const metadata = JSON.stringify(verdict.judge.metadata);
  const detail = reason ?? (metadata === '{}' ? 'the grader gave no reason' : `metadata ${metadata}`);
  return [
    indentWrapped(
      `the grader scored ${verdict.judgeScore ?? verdict.score} (${threshold}): ${prose(detail)}`,
      width,
      '  why: ',
    ),
  ];
}
