import { defineKarotteError } from '@karotte/base';

/** Codes of the errors `@karotte/viewer` raises, and their kinds. */
const VIEWER_ERROR_CODES = {
  /** The options are invalid (no directory given, a directory that is not one, a non-loopback host); `field` names it. */
  INVALID_OPTIONS: 'bad_argument',
  /** The page's script bundle is not beside the module: the package was not built (`pnpm build`). */
  BUNDLE_MISSING: 'internal',
  /** The server could not listen (the port is taken, the address is not this machine's). */
  LISTEN_FAILED: 'system',
  /** `listen()` used twice, or after `close()` (a caller bug). */
  SERVER_STATE: 'bad_argument',
} as const;

/** Codes of the errors `@karotte/viewer` raises. */
export type ViewerErrorCode = keyof typeof VIEWER_ERROR_CODES;

/**
 * An error of `@karotte/viewer`. A run directory that cannot be read is never an error: it is
 * listed with its problems. Recognise it with `ViewerError.isInstance(error)`.
 */
export class ViewerError extends defineKarotteError({ name: 'ViewerError', codes: VIEWER_ERROR_CODES }) {
  readonly field: string | undefined;

  constructor(code: ViewerErrorCode, message: string, options: { field?: string; cause?: unknown } = {}) {
    super(code, message, { cause: options.cause });
    this.field = options.field;
  }
}
