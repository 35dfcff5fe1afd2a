import { defineKarotteError } from '@karotte/base';

/** Codes of the errors `@karotte/agents` raises, and their kinds. */
const AGENT_ERROR_CODES = {
  /**
   * The model endpoint kept failing (every attempt the retry policy allows), or refused the
   * request in a way no retry fixes (a 400, a 404, a body that is not a chat completion):
   * an infrastructure fault, never the student's failure. `httpStatus` is the last status.
   */
  AGENT_FAILED: 'system',
  /** The caller's `abortSignal` fired, mid-request or mid-backoff. */
  ABORTED: 'system',
  /** The replay file is not the contract's shape; `field` names it. */
  INVALID_REPLAY: 'bad_argument',
} as const;

/** Codes of the errors `@karotte/agents` raises. */
export type AgentErrorCode = keyof typeof AGENT_ERROR_CODES;

/** What an {@link AgentError} carries besides its code and message. */
export interface AgentErrorOptions {
  /** The offending replay field (`replay[2].tool_calls`), when there is one. */
  readonly field?: string;
  /** The last HTTP status the endpoint answered with; null when no response came (a reset). */
  readonly httpStatus?: number | null;
  /** How many requests were made before giving up. */
  readonly attempts?: number;
  readonly cause?: unknown;
}

/**
 * An error of `@karotte/agents`. Recognise it with `AgentError.isInstance(error)` (true across
 * installed copies, where `instanceof` is not).
 */
export class AgentError extends defineKarotteError({ name: 'AgentError', codes: AGENT_ERROR_CODES }) {
  readonly field: string | undefined;
  readonly httpStatus: number | null;
  readonly attempts: number;

  constructor(code: AgentErrorCode, message: string, options: AgentErrorOptions = {}) {
    super(code, message, { cause: options.cause });
    this.field = options.field;
    this.httpStatus = options.httpStatus ?? null;
    this.attempts = options.attempts ?? 0;
  }
}
