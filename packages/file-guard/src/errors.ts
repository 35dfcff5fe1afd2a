import { KarotteError } from '@karotte/base';
import type { ErrorKind } from '@karotte/base';

/**
 * Codes of the errors `@karotte/file-guard` throws. Expected outcomes (a refused file, a
 * student-made failure) are never errors: they are data in the results.
 *
 * - `DESTINATION_EXISTS`: an explicit custody destination already exists (a harness bug).
 * - `ABORTED`: the caller's `abortSignal` fired.
 * - `TIMED_OUT`: custody ran past `timeoutMs` (budgets bound the work, so this is a host fault).
 * - `PROC_UNAVAILABLE`: `/proc/self/fd` is missing or does not resolve to this process's
 *   descriptors; the fd-relative walk cannot be done soundly without it.
 * - `HELPER_FAILED`: the as-uid helper could not be started or broke its protocol for a
 *   reason the student cannot cause (setpriv missing, node not executable by the uid).
 */
export type FileGuardErrorCode =
  'DESTINATION_EXISTS' | 'ABORTED' | 'TIMED_OUT' | 'PROC_UNAVAILABLE' | 'HELPER_FAILED';

const KINDS: Record<FileGuardErrorCode, ErrorKind> = {
  DESTINATION_EXISTS: 'bad_argument',
  ABORTED: 'system',
  TIMED_OUT: 'system',
  PROC_UNAVAILABLE: 'system',
  HELPER_FAILED: 'system',
};

/** An error of `@karotte/file-guard`: a harness or host fault, never student misbehavior. */
export class FileGuardError extends KarotteError<FileGuardErrorCode> {
  override readonly name = 'FileGuardError';

  constructor(code: FileGuardErrorCode, message: string, options: { cause?: unknown } = {}) {
    super({ code, kind: KINDS[code], message, cause: options.cause });
  }
}
