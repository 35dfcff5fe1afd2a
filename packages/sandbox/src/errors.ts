import { defineKarotteError } from '@karotte/base';

/** Stable codes of the errors `@karotte/sandbox` raises, and their kinds. Never reworded once published. */
const SANDBOX_ERROR_CODES = {
  /** The host cannot give a defense the sandbox requires; `missing` names each one. */
  HOST_UNSUPPORTED: 'system',
  /** The network check before the first step found the sandbox could reach a forbidden address. */
  NETWORK_NOT_ISOLATED: 'system',
  /** Building the sandbox's namespaces, mounts or identity failed. */
  SETUP_FAILED: 'system',
  /**
   * The episode's memory and open-file budget did not fit beside the running episodes on this
   * host within its admission wait (`admissionWaitMs`): the host is busy, try later.
   */
  HOST_BUSY: 'system',
  /** Every uid of the reserved range is in use by a live episode. */
  NO_FREE_IDENTITY: 'system',
  /** The sandbox was used after `destroy()`: a caller bug. */
  DESTROYED: 'bad_argument',
  /** Teardown could not prove that everything of the sandbox is gone; `leftovers` lists what remains. */
  TEARDOWN_INCOMPLETE: 'system',
} as const;

/** Stable codes of the errors `@karotte/sandbox` raises. */
export type SandboxErrorCode = keyof typeof SANDBOX_ERROR_CODES;

/** The error of `@karotte/sandbox`. Expected outcomes (timeouts, refusals) are results, not errors. */
export class SandboxError extends defineKarotteError({ name: 'SandboxError', codes: SANDBOX_ERROR_CODES }) {
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
    super(code, message, { cause: options.cause });
    this.missing = options.missing ?? [];
    this.leftovers = options.leftovers ?? [];
    this.detail = options.detail;
  }
}
