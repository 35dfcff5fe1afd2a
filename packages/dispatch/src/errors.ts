import { KarotteError } from '@karotte/base';
import type { ErrorKind } from '@karotte/base';

/**
 * Codes of the errors `@karotte/dispatch` throws: a closed union, never reworded once
 * published. Expected outcomes (a limit hit, a refused file, a timeout) are never errors: they
 * are data in the results. Caller mistakes are `BadArgumentError` from `@karotte/base`.
 *
 * - `ABORTED`: the caller's `abortSignal` fired before the work was done.
 */
export type DispatchErrorCode = 'ABORTED';

const KINDS: Record<DispatchErrorCode, ErrorKind> = {
  ABORTED: 'system',
};

/** An error of `@karotte/dispatch`: a harness or host fault, never student misbehavior. */
export class DispatchError extends KarotteError<DispatchErrorCode> {
  override readonly name = 'DispatchError';

  constructor(code: DispatchErrorCode, message: string, options: { cause?: unknown } = {}) {
    super({ code, kind: KINDS[code], message, cause: options.cause });
  }
}

/** True for a {@link DispatchError}, whichever installed copy of the package created it. */
export function isDispatchError(value: unknown): value is DispatchError {
  return KarotteError.isInstance(value) && value.name === 'DispatchError';
}
