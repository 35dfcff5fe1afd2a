import { defineKarotteError } from '@karotte/base';

/**
 * Codes of {@link ProcReaperError}, and their kinds. Student misbehavior is never an error: a
 * cohort that outlives the deadline is a `MisbehaviorRecord` (`UNREAPABLE`) in the returned
 * record.
 */
const PROC_REAPER_ERROR_CODES = {
  /**
   * The caller cannot reap (not root, or missing CAP_KILL / CAP_SETUID / CAP_SETGID, or the uid
   * is not mapped in the caller's user namespace). A privilege the host does not give, like
   * every "not root" in Karotte; raised at the first call, before anything is killed.
   */
  NOT_PRIVILEGED: 'system',
  /**
   * The in-cohort helper could never run on this host (every attempt failed with an exit
   * status, not with a signal or a timeout a student could cause).
   */
  HELPER_UNAVAILABLE: 'system',
  /** `/proc` is missing or is not this process's PID namespace's procfs. */
  PROC_UNAVAILABLE: 'system',
  /** The caller's `abortSignal` fired. Nothing was confirmed. */
  ABORTED: 'system',
} as const;

/** Codes of {@link ProcReaperError}. */
export type ProcReaperErrorCode = keyof typeof PROC_REAPER_ERROR_CODES;

/** The error every `@karotte/proc-reaper` API throws besides `BadArgumentError` and `SystemError`. */
export class ProcReaperError extends defineKarotteError({
  name: 'ProcReaperError',
  codes: PROC_REAPER_ERROR_CODES,
}) {}
