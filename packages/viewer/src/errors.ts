import { KarotteError } from '@karotte/base';
import type { ErrorKind } from '@karotte/base';

/**
 * Codes of the errors `@karotte/viewer` throws: a closed union, never reworded once
 * published. Expected outcomes (a limit hit, a refused file, a timeout) are never errors: they
 * are data in the results. Caller mistakes are `BadArgumentError` from `@karotte/base`.
 *
 * - `ABORTED`: the caller's `abortSignal` fired before the work was done.
 */
export type ViewerErrorCode = 'ABORTED';

const KINDS: Record<ViewerErrorCode, ErrorKind> = {
  ABORTED: 'system',
};

/** An error of `@karotte/viewer`: a harness or host fault, never student misbehavior. */
export class ViewerError extends KarotteError<ViewerErrorCode> {
  override readonly name = 'ViewerError';

  constructor(code: ViewerErrorCode, message: string, options: { cause?: unknown } = {}) {
    super({ code, kind: KINDS[code], message, cause: options.cause });
  }
}

/** True for a {@link ViewerError}, whichever installed copy of the package created it. */
export function isViewerError(value: unknown): value is ViewerError {
  return KarotteError.isInstance(value) && value.name === 'ViewerError';
}
