import { defineKarotteError } from '@karotte/base';

/** Every code a {@link LimitsError} can carry, and its kind. Closed: codes are added, never reworded. */
const LIMITS_ERROR_CODES = {
  /**
   * No usable cgroup hierarchy (not root, read-only cgroupfs, a required controller missing,
   * no delegation).
   */
  CGROUPS_UNAVAILABLE: 'system',
  /**
   * A value was written and did not read back (the kernel refused it, or a sandboxing runtime
   * accepted the write and enforces nothing). Fail closed.
   */
  LIMIT_NOT_APPLIED: 'system',
  /** A cgroup with that name already exists (names must be unique). */
  GROUP_EXISTS: 'bad_argument',
  /** Processes were still in a group when the removal deadline passed. */
  GROUP_NOT_EMPTY: 'system',
  /** The disk quota could not be created, mounted or removed. */
  QUOTA_FAILED: 'system',
  /** The host (or the parent cgroup) has no memory left for a student once the harness headroom is kept. */
  INSUFFICIENT_MEMORY: 'system',
  /** A state or image directory is not owned by us or is writable by others, so its records could be forged. */
  UNSAFE_STATE_DIR: 'system',
  /**
   * The kernel's OOM killer killed a process of the group while the group was within its own
   * limit: an OOM outside it (the host ran out, or an ancestor's limit). An infrastructure fault
   * of the host, never the student's misbehavior.
   */
  HOST_OUT_OF_MEMORY: 'system',
  /**
   * An episode asks for more memory or file-table budget than the whole host can give all
   * episodes together (`admit()`): it could never run here.
   */
  ADMISSION_REFUSED: 'system',
  /** An episode did not fit beside the running ones within its wait (`admit()`): the host is busy. */
  ADMISSION_TIMEOUT: 'system',
  /** The operation's `abortSignal` fired. */
  ABORTED: 'system',
  /** A group or quota was used after `remove()` (a caller bug). */
  REMOVED: 'bad_argument',
} as const;

/** Every code a {@link LimitsError} can carry. */
export type LimitsErrorCode = keyof typeof LIMITS_ERROR_CODES;

/** Details a {@link LimitsError} may carry. */
interface LimitsErrorDetails {
  /** The cgroup file, image or directory involved. */
  readonly path?: string;
  /** The value written (as text), for `LIMIT_NOT_APPLIED`. */
  readonly wanted?: string;
  /** The value read back (as text), for `LIMIT_NOT_APPLIED`. */
  readonly got?: string;
  readonly cause?: unknown;
}

/** The error of `@karotte/limits`: a stable `code`, the path involved and the original `cause`. */
export class LimitsError extends defineKarotteError({ name: 'LimitsError', codes: LIMITS_ERROR_CODES }) {
  readonly path: string | undefined;
  readonly wanted: string | undefined;
  readonly got: string | undefined;

  constructor(code: LimitsErrorCode, message: string, details: LimitsErrorDetails = {}) {
    super(code, message, { cause: details.cause });
    this.path = details.path;
    this.wanted = details.wanted;
    this.got = details.got;
  }
}

/** Throw `ABORTED` when the signal has fired. */
export function throwIfAborted(abortSignal: AbortSignal | undefined): void {
  if (abortSignal?.aborted) {
    throw new LimitsError('ABORTED', 'the operation was aborted', { cause: abortSignal.reason });
  }
}
