import { defineKarotteError } from '@karotte/base';

/**
 * Codes of the errors `@karotte/file-guard` throws, and their kinds. Expected outcomes (a
 * refused file, a student-made failure) are never errors: they are data in the results.
 */
const FILE_GUARD_ERROR_CODES = {
  /** An explicit custody destination already exists (a harness bug). */
  DESTINATION_EXISTS: 'bad_argument',
  /** The caller's `abortSignal` fired. */
  ABORTED: 'system',
  /** Custody ran past `timeoutMs` (budgets bound the work, so this is a host fault). */
  TIMED_OUT: 'system',
  /**
   * `/proc/self/fd` is missing or does not resolve to this process's descriptors; the
   * fd-relative walk cannot be done soundly without it.
   */
  PROC_UNAVAILABLE: 'system',
  /**
   * The as-uid helper could not be started or broke its protocol for a reason the student
   * cannot cause (setpriv missing, node not executable by the uid).
   */
  HELPER_FAILED: 'system',
} as const;

/** Codes of the errors `@karotte/file-guard` throws. */
export type FileGuardErrorCode = keyof typeof FILE_GUARD_ERROR_CODES;

/** An error of `@karotte/file-guard`: a harness or host fault, never student misbehavior. */
export class FileGuardError extends defineKarotteError({
  name: 'FileGuardError',
  codes: FILE_GUARD_ERROR_CODES,
}) {}
