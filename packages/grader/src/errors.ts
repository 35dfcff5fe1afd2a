import { BadArgumentError, SystemError, TrustedBinaryError, defineKarotteError } from '@karotte/base';
import type { BaseErrorCode } from '@karotte/base';
import { FileGuardError } from '@karotte/file-guard';
import type { FileGuardErrorCode } from '@karotte/file-guard';
import { LimitsError } from '@karotte/limits';
import type { LimitsErrorCode } from '@karotte/limits';
import { ProcReaperError } from '@karotte/proc-reaper';
import type { ProcReaperErrorCode } from '@karotte/proc-reaper';
import { SandboxError } from '@karotte/sandbox';
import type { SandboxErrorCode } from '@karotte/sandbox';

/**
 * Codes of the grader's host and environment faults, and their kinds. They appear as
 * `verdict.error.code` when a run ends in `error`, and as the code of a thrown
 * {@link GraderError} from the lower-level helpers. Never reworded once published: add, never
 * rename.
 */
const GRADER_ERROR_KINDS = {
  /** The grader program (or its interpreter) does not exist or is not a regular file. */
  GRADER_NOT_FOUND: 'system',
  /**
   * The interpreter (or its resolved target) is not a system install: not root-owned, a
   * directory on its path writable by group or others, hidden (`~/.nvm`), or out of the
   * grader uid's reach (see `checkGraderInterpreter`).
   */
  UNTRUSTED_INTERPRETER: 'system',
  /** The host cannot give the confinement the judge requires (root, cgroups, namespaces). */
  CONFINEMENT_UNAVAILABLE: 'system',
  /** The task's hidden data cannot be read (missing, unreadable, or not a plain tree). */
  HIDDEN_DATA_UNAVAILABLE: 'system',
  /** Setting up the grader's private directory, cgroup or identity failed on the host. */
  SETUP_FAILED: 'system',
  /** Reaping the student could not run at all (a host fault, not the student's doing). */
  REAP_FAILED: 'system',
  /** Reclaiming the student's leftovers failed on the host. */
  RECLAIM_FAILED: 'system',
  /** Taking custody failed on the host (out of disk outside the student's quota, ...). */
  CUSTODY_FAILED: 'system',
  /** A judge's external service (a rubric model) failed or timed out. */
  JUDGE_UNAVAILABLE: 'system',
  /** The operation was cancelled through its `abortSignal`. */
  ABORTED: 'system',
  /** A bug in the harness: an exception nobody expected. */
  INTERNAL: 'internal',
} as const;

export type GraderErrorCode = keyof typeof GRADER_ERROR_KINDS;

/** A fault of the host or the environment while grading; never caused by the student. */
export class GraderError extends defineKarotteError({ name: 'GraderError', codes: GRADER_ERROR_KINDS }) {}

/**
 * Every code a verdict's `error` can carry: a {@link GraderErrorCode}, or the code of an error
 * of a package the grader runs (a reap that needs root is `NOT_PRIVILEGED`, a full disk
 * `SYSTEM_ERROR`).
 */
export type VerdictErrorCode =
  | GraderErrorCode
  | BaseErrorCode
  | LimitsErrorCode
  | ProcReaperErrorCode
  | FileGuardErrorCode
  | SandboxErrorCode;

const VERDICT_ERROR_CODES: ReadonlySet<string> = new Set<VerdictErrorCode>([
  ...GraderError.codes,
  ...BadArgumentError.codes,
  ...SystemError.codes,
  ...TrustedBinaryError.codes,
  ...LimitsError.codes,
  ...ProcReaperError.codes,
  ...FileGuardError.codes,
  ...SandboxError.codes,
]);

/** True when `code` is one of the closed {@link VerdictErrorCode}s. */
export function isVerdictErrorCode(code: string): code is VerdictErrorCode {
  return VERDICT_ERROR_CODES.has(code);
}
