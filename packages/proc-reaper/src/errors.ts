import { KarotteError } from '@karotte/base';
import type { ErrorKind } from '@karotte/base';

/**
 * Codes of {@link ProcReaperError}. Student misbehavior is never an error: a cohort that
 * outlives the deadline is a `MisbehaviorRecord` (`UNREAPABLE`) in the returned record.
 *
 * - `NOT_PRIVILEGED`: the caller cannot reap (not root, or missing CAP_KILL / CAP_SETUID /
 *   CAP_SETGID, or the uid is not mapped in the caller's user namespace). A caller mistake,
 *   raised at the first call, before anything is killed.
 * - `HELPER_UNAVAILABLE`: the in-cohort helper could never run on this host (every attempt
 *   failed with an exit status, not with a signal or a timeout a student could cause).
 * - `PROC_UNAVAILABLE`: `/proc` is missing or is not this process's PID namespace's procfs.
 * - `ABORTED`: the caller's `abortSignal` fired. Nothing was confirmed.
 */
export type ProcReaperErrorCode = 'NOT_PRIVILEGED' | 'HELPER_UNAVAILABLE' | 'PROC_UNAVAILABLE' | 'ABORTED';

const KIND: Record<ProcReaperErrorCode, ErrorKind> = {
  NOT_PRIVILEGED: 'bad_argument',
  HELPER_UNAVAILABLE: 'system',
  PROC_UNAVAILABLE: 'system',
  ABORTED: 'bad_argument',
};

/** The error every `@karotte/proc-reaper` API throws besides `BadArgumentError` and `SystemError`. */
export class ProcReaperError extends KarotteError<ProcReaperErrorCode> {
  override readonly name = 'ProcReaperError';

  constructor(code: ProcReaperErrorCode, message: string, options: { cause?: unknown } = {}) {
    super({ code, kind: KIND[code], message, cause: options.cause });
  }
}
