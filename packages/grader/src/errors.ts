import { KarotteError } from '@karotte/base';
import type { ErrorKind } from '@karotte/base';

/**
 * Codes of the grader's host and environment faults. They appear as `verdict.error.code` when a
 * run ends in `error`, and as the code of a thrown {@link GraderError} from the lower-level
 * helpers. Never reworded once published: add, never rename.
 */
export const GRADER_ERROR_CODES = [
  /** The grader program (or its interpreter) does not exist or is not a regular file. */
  'GRADER_NOT_FOUND',
  /**
   * The interpreter (or its resolved target) is not a system install: not root-owned, a
   * directory on its path writable by group or others, hidden (`~/.nvm`), or out of the
   * grader uid's reach (see `checkGraderInterpreter`).
   */
  'UNTRUSTED_INTERPRETER',
  /** The host cannot give the confinement the judge requires (root, cgroups, namespaces). */
  'CONFINEMENT_UNAVAILABLE',
  /** The task's hidden data cannot be read (missing, unreadable, or not a plain tree). */
  'HIDDEN_DATA_UNAVAILABLE',
  /** Setting up the grader's private directory, cgroup or identity failed on the host. */
  'SETUP_FAILED',
  /** Reaping the student could not run at all (a host fault, not the student's doing). */
  'REAP_FAILED',
  /** Reclaiming the student's leftovers failed on the host. */
  'RECLAIM_FAILED',
  /** Taking custody failed on the host (out of disk outside the student's quota, ...). */
  'CUSTODY_FAILED',
  /** A judge's external service (a rubric model) failed or timed out. */
  'JUDGE_UNAVAILABLE',
  /** The operation was cancelled through its `abortSignal`. */
  'ABORTED',
  /** A bug in the harness: an exception nobody expected. */
  'INTERNAL',
] as const;

export type GraderErrorCode = (typeof GRADER_ERROR_CODES)[number];

/** A fault of the host or the environment while grading; never caused by the student. */
export class GraderError extends KarotteError<GraderErrorCode> {
  override readonly name = 'GraderError';

  constructor(code: GraderErrorCode, message: string, options: { cause?: unknown; kind?: ErrorKind } = {}) {
    super({
      code,
      message,
      kind: options.kind ?? (code === 'INTERNAL' ? 'internal' : 'system'),
      cause: options.cause,
    });
  }
}
