import { KarotteError } from '@karotte/base';
import type { ErrorKind } from '@karotte/base';

/**
 * Codes of the errors `@karotte/template-package` throws: a closed union, never reworded once
 * published. Expected outcomes (a limit hit, a refused file, a timeout) are never errors: they
 * are data in the results. Caller mistakes are `BadArgumentError` from `@karotte/base`.
 *
 * - `ABORTED`: the caller's `abortSignal` fired before the work was done.
 */
export type TemplatePackageErrorCode = 'ABORTED';

const KINDS: Record<TemplatePackageErrorCode, ErrorKind> = {
  ABORTED: 'system',
};

/** An error of `@karotte/template-package`: a harness or host fault, never student misbehavior. */
export class TemplatePackageError extends KarotteError<TemplatePackageErrorCode> {
  override readonly name = 'TemplatePackageError';

  constructor(code: TemplatePackageErrorCode, message: string, options: { cause?: unknown } = {}) {
    super({ code, kind: KINDS[code], message, cause: options.cause });
  }
}

/** True for a {@link TemplatePackageError}, whichever installed copy of the package created it. */
export function isTemplatePackageError(value: unknown): value is TemplatePackageError {
  return KarotteError.isInstance(value) && value.name === 'TemplatePackageError';
}
