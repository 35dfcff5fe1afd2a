import { KarotteError } from '@karotte/base';

/** Codes of the errors `@karotte/core` raises. */
export type CoreErrorCode =
  | 'INVALID_TASK'
  | 'TASK_NOT_FOUND'
  | 'INVALID_REPLAY'
  | 'EPISODE_STATE'
  | 'CONFINEMENT_UNAVAILABLE'
  /** The agent (the model's side) threw instead of producing a message. */
  | 'AGENT_FAILED';

/** An error of `@karotte/core`. `field` names the offending task or replay field when known. */
export class CoreError extends KarotteError<CoreErrorCode> {
  override readonly name = 'CoreError';
  readonly field: string | undefined;

  constructor(
    code: CoreErrorCode,
    message: string,
    options: { field?: string; cause?: unknown; kind?: 'bad_argument' | 'system' | 'internal' } = {},
  ) {
    super({
      code,
      message,
      cause: options.cause,
      kind:
        options.kind ??
        (code === 'CONFINEMENT_UNAVAILABLE' || code === 'AGENT_FAILED'
          ? 'system'
          : code === 'EPISODE_STATE'
            ? 'internal'
            : 'bad_argument'),
    });
    this.field = options.field;
  }
}
