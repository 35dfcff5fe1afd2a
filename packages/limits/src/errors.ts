import { KarotteError } from '@karotte/base';
import type { ErrorKind } from '@karotte/base';

/**
 * Every code a {@link LimitsError} can carry. Closed: codes are added, never reworded.
 *
 * - `CGROUPS_UNAVAILABLE`: no usable cgroup hierarchy (not root, read-only cgroupfs, a
 *   required controller missing, no delegation).
 * - `LIMIT_NOT_APPLIED`: a value was written and did not read back (the kernel refused it,
 *   or a sandboxing runtime accepted the write and enforces nothing). Fail closed.
 * - `GROUP_EXISTS`: a cgroup with that name already exists (names must be unique).
 * - `GROUP_NOT_EMPTY`: processes were still in a group when the removal deadline passed.
 * - `QUOTA_FAILED`: the disk quota could not be created, mounted or removed.
 * - `INSUFFICIENT_MEMORY`: the host (or the parent cgroup) has no memory left for a student
 *   once the harness headroom is kept.
 * - `UNSAFE_STATE_DIR`: a state or image directory is not owned by us or is writable by others,
 *   so its records could be forged.
 * - `ABORTED`: the operation's `abortSignal` fired.
 * - `REMOVED`: a group or quota was used after `remove()`.
 */
export type LimitsErrorCode =
  | 'CGROUPS_UNAVAILABLE'
  | 'LIMIT_NOT_APPLIED'
  | 'GROUP_EXISTS'
  | 'GROUP_NOT_EMPTY'
  | 'QUOTA_FAILED'
  | 'INSUFFICIENT_MEMORY'
  | 'UNSAFE_STATE_DIR'
  | 'ABORTED'
  | 'REMOVED';

const KIND: Record<LimitsErrorCode, ErrorKind> = {
  CGROUPS_UNAVAILABLE: 'system',
  LIMIT_NOT_APPLIED: 'system',
  GROUP_EXISTS: 'bad_argument',
  GROUP_NOT_EMPTY: 'system',
  QUOTA_FAILED: 'system',
  INSUFFICIENT_MEMORY: 'system',
  UNSAFE_STATE_DIR: 'system',
  ABORTED: 'system',
  REMOVED: 'bad_argument',
};

/** Details a {@link LimitsError} may carry. */
export interface LimitsErrorDetails {
  /** The cgroup file, image or directory involved. */
  readonly path?: string;
  /** The value written (as text), for `LIMIT_NOT_APPLIED`. */
  readonly wanted?: string;
  /** The value read back (as text), for `LIMIT_NOT_APPLIED`. */
  readonly got?: string;
  readonly cause?: unknown;
}

/** The error of `@karotte/limits`: a stable `code`, the path involved and the original `cause`. */
export class LimitsError extends KarotteError<LimitsErrorCode> {
  override readonly name = 'LimitsError';
  readonly path: string | undefined;
  readonly wanted: string | undefined;
  readonly got: string | undefined;

  constructor(code: LimitsErrorCode, message: string, details: LimitsErrorDetails = {}) {
    super({ code, kind: KIND[code], message, cause: details.cause });
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
