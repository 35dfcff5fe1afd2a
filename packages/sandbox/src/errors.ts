import { KarotteError } from '@karotte/base';

/** Stable codes of the errors `@karotte/sandbox` raises. Never reworded once published. */
export type SandboxErrorCode =
  /** The host cannot give a defense the sandbox requires; `missing` names each one. */
  | 'HOST_UNSUPPORTED'
  /** The network check before the first step found the sandbox could reach a forbidden address. */
  | 'NETWORK_NOT_ISOLATED'
  /** Building the sandbox's namespaces, mounts or identity failed. */
  | 'SETUP_FAILED'
  /** Every uid of the reserved range is in use by a live episode. */
  | 'NO_FREE_IDENTITY'
  /** The sandbox was used after `destroy()`. */
  | 'DESTROYED'
  /** Teardown could not prove that everything of the sandbox is gone; `leftovers` lists what remains. */
  | 'TEARDOWN_INCOMPLETE';

/** The error of `@karotte/sandbox`. Expected outcomes (timeouts, refusals) are results, not errors. */
export class SandboxError extends KarotteError<SandboxErrorCode> {
  override readonly name = 'SandboxError';
  /** For `HOST_UNSUPPORTED`: each missing defense, one short sentence each. */
  readonly missing: readonly string[];
  /** For `TEARDOWN_INCOMPLETE`: what is left behind. */
  readonly leftovers: readonly string[];
  /** Structured detail (e.g. the network verdict for `NETWORK_NOT_ISOLATED`). */
  readonly detail: unknown;

  constructor(
    code: SandboxErrorCode,
    message: string,
    options: {
      missing?: readonly string[];
      leftovers?: readonly string[];
      detail?: unknown;
      cause?: unknown;
    } = {},
  ) {
    super({ code, kind: 'system', message, cause: options.cause });
    this.missing = options.missing ?? [];
    this.leftovers = options.leftovers ?? [];
    this.detail = options.detail;
  }
}

/** True for a {@link SandboxError} from any installed copy of this package. */
export function isSandboxError(value: unknown): value is SandboxError {
  return KarotteError.isInstance(value) && value.name === 'SandboxError';
}
