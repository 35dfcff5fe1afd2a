import { escapeForDisplay, isErrno, KarotteError, toSystemError } from '@karotte/base';
import { GraderError } from './errors.js';
import type { JsonValue } from '@karotte/base';
import type {
  Confinement,
  GraderFailure,
  GraderFailureReason,
  HostFault,
  JudgeKind,
  JudgeReport,
  LimitHit,
} from './verdict.js';

/** What a judge may look at. Every path is root-only and was never writable by the student. */
export interface JudgeContext {
  /**
   * The custody directory: copies of the declared submission paths at the same relative
   * paths; a path the student never created is absent. Null when there is no submission.
   */
  readonly submissionDir: string | null;
  /** The task's hidden data (answer keys), or null. */
  readonly hiddenDir: string | null;
  /** The student's final answer (last assistant message), or null. */
  readonly finalAnswer: string | null;
  /** Cancels the judge; a cancelled judge reports `error` with code `ABORTED`. */
  readonly abortSignal: AbortSignal;
  /** Path of this judge in the judge tree (`all/any/regex`), for reports. */
  readonly path: string;
}

/** A judge: evaluates a submission and reports, never throwing for expected outcomes. */
export interface Judge {
  readonly kind: JudgeKind;
  /** Name used in reports. */
  readonly name: string;
  /** Evaluate. Failures on the submission are `failed` reports; host faults are `error` reports. */
  evaluate(context: JudgeContext): Promise<JudgeReport>;
  /**
   * Optional: check, before an episode starts, what this judge needs from the host (the
   * executable judge: its program and its interpreter). Throws the {@link GraderError} that
   * `evaluate` would end in as an `error` report, so a caller can refuse an episode up front
   * instead of running it to an end that cannot be graded. Composites check every child.
   */
  preflight?(): Promise<void>;
  /**
   * Optional: make ahead what `evaluate` would set up before it can look at a submission (the
   * executable judge: its private directory, uid, cgroup, program copy, namespaces and
   * mounts, its world started), so that setup overlaps the episode instead of following it.
   * Returns a judge whose first evaluation uses what was made; release it with `dispose()`
   * whether or not it was evaluated. Nothing of the episode is in it: the submission and the
   * hidden data are copied in by `evaluate`, after the student's processes are reaped.
   * Composites prepare every child that can be.
   * @throws the fault `evaluate` would report (a {@link GraderError}); the judge itself is
   *   unchanged, so a caller may evaluate it unprepared and get that fault as a report.
   */
  prepare?(options?: PrepareOptions): Promise<PreparedJudge>;
}

/** Options of {@link Judge.prepare}. */
export interface PrepareOptions {
  /** Cancels the preparation (it then throws); a prepared judge is released by `dispose()`. */
  readonly abortSignal?: AbortSignal;
  /**
   * What was made ahead is used only younger than this; an older one is released and the
   * evaluation sets up anew. @default 600000 (10 minutes)
   */
  readonly maxAgeMs?: number;
}

/** Default of {@link PrepareOptions.maxAgeMs}. */
export const PREPARED_MAX_AGE_MS = 600_000;

/** A judge with its setup made ahead ({@link Judge.prepare}). */
export interface PreparedJudge extends Judge {
  /**
   * True while what was made ahead is unused and still holds (the executable judge: younger
   * than `maxAgeMs`, its grader's world alive). A cheap re-check for a pool handing prepared
   * judges out.
   */
  usable(): boolean;
  /**
   * Release what was made ahead and not used (the first evaluation takes it). Idempotent;
   * never throws (a part that cannot be released stays for `recoverLeftovers`).
   */
  dispose(): Promise<void>;
}

/**
 * `judge.prepare()` when the judge has one, else null (nothing to make ahead: evaluate the
 * judge itself).
 * @throws what `prepare()` throws, a foreign error wrapped as `INTERNAL`.
 */
export async function prepareJudge(
  judge: Judge,
  options: PrepareOptions = {},
): Promise<PreparedJudge | null> {
  if (typeof judge.prepare !== 'function') return null;
  try {
    return await judge.prepare(options);
  } catch (error) {
    if (KarotteError.isInstance(error)) throw error;
    throw new GraderError('INTERNAL', `preparing judge ${judge.name} failed: ${String(error)}`, {
      cause: error,
    });
  }
}

/**
 * Run `judge.preflight()` when the judge has one (see {@link Judge.preflight}).
 *
 * @throws GraderError with the code the judge would end in (`UNTRUSTED_INTERPRETER`,
 *   `GRADER_NOT_FOUND`, ...); a foreign error is wrapped as `INTERNAL`.
 */
export async function preflightJudge(judge: Judge): Promise<void> {
  if (typeof judge.preflight !== 'function') return;
  try {
    await judge.preflight();
  } catch (error) {
    if (KarotteError.isInstance(error)) throw error;
    throw new GraderError('INTERNAL', `preflight of judge ${judge.name} failed: ${String(error)}`, {
      cause: error,
    });
  }
}

/** The confinement of judges that run inside the harness process. */
export const IN_PROCESS_CONFINEMENT: Confinement = Object.freeze({
  level: 'in_process',
  uid: null,
  namespaces: [],
  memory: 'not_supported',
  pids: 'not_supported',
  wallTime: 'detected_and_reaped',
  output: 'not_supported',
  networkIsolated: false,
});

export interface ReportBase {
  readonly name: string;
  readonly kind: JudgeKind;
  readonly confinement: Confinement;
  readonly startedAt: number;
  readonly limitHits?: readonly LimitHit[];
}

/** A `scored` report. */
export function scoredReport(
  base: ReportBase,
  score: number,
  metadata: Record<string, JsonValue> = {},
): JudgeReport {
  return {
    name: base.name,
    kind: base.kind,
    status: 'scored',
    score,
    metadata,
    failure: null,
    error: null,
    limitHits: base.limitHits ?? [],
    confinement: base.confinement,
    durationMs: elapsed(base.startedAt),
  };
}

/** A `failed` report (a judge failure caused by the submission: scores 0). */
export function failedReport(
  base: ReportBase,
  context: Pick<JudgeContext, 'path'>,
  reason: GraderFailureReason,
  message: string,
  details: Partial<Omit<GraderFailure, 'judge' | 'reason' | 'message'>> = {},
  metadata: Record<string, JsonValue> = {},
): JudgeReport {
  return {
    name: base.name,
    kind: base.kind,
    status: 'failed',
    score: 0,
    metadata,
    failure: {
      judge: context.path,
      reason,
      message: escapeForDisplay(message, 2048),
      exitCode: details.exitCode ?? null,
      signal: details.signal ?? null,
      timedOut: details.timedOut ?? false,
      stderrTail: details.stderrTail ?? '',
      stdoutTail: details.stdoutTail ?? '',
    },
    error: null,
    limitHits: base.limitHits ?? [],
    confinement: base.confinement,
    durationMs: elapsed(base.startedAt),
  };
}

/** An `error` report (a host or environment fault). */
export function errorReport(base: ReportBase, fault: { code: string; message: string }): JudgeReport {
  const error: HostFault = {
    code: fault.code,
    message: escapeForDisplay(fault.message, 2048),
    phase: 'judge',
  };
  return {
    name: base.name,
    kind: base.kind,
    status: 'error',
    score: 0,
    metadata: {},
    failure: null,
    error,
    limitHits: base.limitHits ?? [],
    confinement: base.confinement,
    durationMs: elapsed(base.startedAt),
  };
}

/** Turn an unexpected exception into a host fault: Karotte errors keep their code. */
export function faultFromError(error: unknown): { code: string; message: string } {
  if (KarotteError.isInstance(error)) return { code: error.code, message: error.message };
  // An errno error from the host (ENOSPC outside the student's quota, EIO, EMFILE).
  if (isErrno(error)) return { code: 'SYSTEM_ERROR', message: toSystemError(error, 'host fault').message };
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'INTERNAL', message };
}

/**
 * Run `judge.evaluate` and never throw: an unexpected exception becomes an `error` report
 * (a bug or host fault, not the student's doing). Used by composites and `collectAndGrade`.
 */
export async function evaluateJudge(judge: Judge, context: JudgeContext): Promise<JudgeReport> {
  const startedAt = performance.now();
  if (context.abortSignal.aborted) {
    return errorReport(
      { name: judge.name, kind: judge.kind, confinement: IN_PROCESS_CONFINEMENT, startedAt },
      { code: 'ABORTED', message: 'grading was cancelled' },
    );
  }
  try {
    return await judge.evaluate(context);
  } catch (error) {
    return errorReport(
      { name: judge.name, kind: judge.kind, confinement: IN_PROCESS_CONFINEMENT, startedAt },
      faultFromError(error),
    );
  }
}

/** Milliseconds since `start` (a `performance.now()` value), rounded to 0.1 ms. */
export function elapsed(start: number): number {
  return Math.max(0, Math.round((performance.now() - start) * 10) / 10);
}

/** Join a child name onto a judge path. */
export function childPath(parent: string, name: string): string {
  return parent === '' ? name : `${parent}/${name}`;
}
