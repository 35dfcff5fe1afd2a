import { defineKarotteError } from '@karotte/base';

/** Codes of the errors `@karotte/dispatch` raises, and their kinds. */
const DISPATCH_ERROR_CODES = {
  /** A job payload fails its schema or is larger than {@link MAX_PAYLOAD_BYTES}; `field` names it. */
  INVALID_PAYLOAD: 'bad_argument',
  /** The worker's task directory is unreadable or two tasks share an id; `field` names the task. */
  INVALID_TASKS: 'bad_argument',
  /** A Redis URL that is not `redis://host:port[/db]`, or one that carries a password. */
  INVALID_REDIS_URL: 'bad_argument',
  /** Redis could not be reached, or a command on it failed. */
  REDIS_UNAVAILABLE: 'system',
  /** Leftovers of an earlier worker on this host could not be reclaimed: no job is taken. */
  LEFTOVERS_UNRECLAIMABLE: 'system',
  /** The host's startup check found a defense weaker than required: no job is taken. */
  HOST_UNFIT: 'system',
  /** `start()` twice, `submit()` after `close()` (a caller bug). */
  DISPATCH_STATE: 'bad_argument',
  /** An attempt stopped because its lock was lost (or may be): it holds no result; the job runs again. */
  LOCK_LOST: 'system',
  /** An episode ended in `error` (a host fault): thrown so BullMQ retries it. */
  HOST_FAULT: 'system',
  /** The caller's `abortSignal` fired first. */
  ABORTED: 'system',
} as const;

/** Codes of the errors `@karotte/dispatch` raises. */
export type DispatchErrorCode = keyof typeof DISPATCH_ERROR_CODES;

/**
 * An error of `@karotte/dispatch`: a caller mistake, a host fault or Redis being away, never
 * something a student did. Recognise it with `DispatchError.isInstance(error)`.
 */
export class DispatchError extends defineKarotteError({
  name: 'DispatchError',
  codes: DISPATCH_ERROR_CODES,
}) {
  readonly field: string | undefined;

  constructor(code: DispatchErrorCode, message: string, options: { field?: string; cause?: unknown } = {}) {
    super(code, message, { cause: options.cause });
    this.field = options.field;
  }
}
