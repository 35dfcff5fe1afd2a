import { defineKarotteError } from '@karotte/base';

/** Codes of the errors `@karotte/server` raises, and their kinds. */
const SERVER_ERROR_CODES = {
  /** The server's options are invalid (a missing tasks directory, an empty token, a bad address); `field` names it. */
  INVALID_OPTIONS: 'bad_argument',
  /** A task directory under `tasksDir` is invalid, or two tasks share an id; `field` names the task. */
  INVALID_TASKS: 'bad_argument',
  /** The server could not listen (the port is taken, the socket path is in use). */
  LISTEN_FAILED: 'system',
  /** `connectMcp()` named no live episode. */
  UNKNOWN_EPISODE: 'bad_argument',
  /** `listen()` or `close()` used out of order (a caller bug). */
  SERVER_STATE: 'bad_argument',
} as const;

/** Codes of the errors `@karotte/server` raises. */
export type ServerErrorCode = keyof typeof SERVER_ERROR_CODES;

/**
 * An error of `@karotte/server`: raised by `createEnvironmentServer`, `listen` and `connectMcp` only. What a
 * request does wrong is an HTTP answer (`{"error": {"code", "message", "field"?}}`), never a
 * throw. Recognise it with `ServerError.isInstance(error)`.
 */
export class ServerError extends defineKarotteError({ name: 'ServerError', codes: SERVER_ERROR_CODES }) {
  readonly field: string | undefined;

  constructor(code: ServerErrorCode, message: string, options: { field?: string; cause?: unknown } = {}) {
    super(code, message, { cause: options.cause });
    this.field = options.field;
  }
}
