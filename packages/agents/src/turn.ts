import type { AssistantMessage, Message, ToolSpec } from './messages.js';

/**
 * Why the model stopped: the chat-completions finish reasons, with `function_call` read as
 * `tool_calls`; `other` for anything else a server sends (the raw value is kept in
 * {@link TurnResponse.providerFinishReason}).
 */
export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'other';

/** The budgets left when a turn starts. */
export interface TurnBudgets {
  /** Turns the step may still take, this one included. */
  readonly turns: number;
  /** Milliseconds left of the episode's wall time (retry waits the agent reports are not counted). */
  readonly timeMs: number;
  /** Context tokens left, when the episode tracks a context limit. */
  readonly contextTokens?: number;
}

/** A retry the agent is about to make, as it tells the episode (transcript, wall time). */
export interface RetryNotice {
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  /** What failed: a status class, a dropped connection, a timeout. */
  readonly kind: RetryKind;
  /** The HTTP status of the failed attempt; null when no response came. */
  readonly httpStatus: number | null;
  /** How long the failed attempt took, in milliseconds. */
  readonly attemptMs: number;
  /** How long the agent waits before the next attempt, in milliseconds. */
  readonly waitMs: number;
  /** One line on what failed (the API key never appears in it). */
  readonly message: string;
}

/** The kinds of failure a retry policy tells apart. */
export type RetryKind = 'rate_limit' | 'server' | 'timeout' | 'connection' | 'unreachable' | 'auth' | 'fatal';

/** What an agent is asked for one turn. */
export interface TurnRequest {
  /** The conversation so far (system, user, assistant and tool messages). */
  readonly conversation: readonly Message[];
  /** The tools the model may call. */
  readonly tools: readonly ToolSpec[];
  readonly remaining: TurnBudgets;
  /** The turn's number in the episode, from 0. */
  readonly turnIndex: number;
  /** Aborts when the episode must stop (cancelled, or past its wall time): stop at once. */
  readonly abortSignal: AbortSignal;
  /**
   * Told of every retry before the agent waits for it, so the episode records it and does not
   * charge the failed attempt and the wait to the student's wall time. Called synchronously;
   * what it throws is ignored.
   */
  readonly onRetry?: (notice: RetryNotice) => void;
}

/** Token counts a server reported for one call. */
export interface TurnUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Input tokens served from the provider's prompt cache, when reported. */
  readonly cachedInputTokens?: number;
  /** Output tokens spent on reasoning, when reported. */
  readonly reasoningTokens?: number;
}

/** Exact tokens of a call, when the server returns them (vLLM `return_token_ids`, `logprobs`). */
export interface TurnTokens {
  /** The prompt as the server tokenized it. */
  readonly promptIds?: readonly number[];
  /** The sampled tokens. */
  readonly completionIds: readonly number[];
  /** The log-probability of each sampled token, in order. */
  readonly logprobs?: readonly number[];
}

/** Where a turn's time went. */
export interface TurnTiming {
  /** The call that answered, in milliseconds: the model's own time, charged to the student. */
  readonly modelMs: number;
  /**
   * Time lost to retries, in milliseconds: the attempts that failed and the waits between them.
   * Not the student's time.
   */
  readonly retryWaitMs: number;
}

/** What an agent answers for one turn. */
export interface TurnResponse {
  readonly message: AssistantMessage;
  readonly finishReason: FinishReason;
  /** The finish reason exactly as the server sent it, when it sent one. */
  readonly providerFinishReason?: string | null;
  readonly usage?: TurnUsage;
  readonly tokens?: TurnTokens;
  readonly timing: TurnTiming;
  /** Requests made for this turn (1 without retries). */
  readonly attempts?: number;
  /** The model that answered, as the server names it. */
  readonly model?: string;
  /** The server's request id (`x-request-id`), when it sent one. */
  readonly requestId?: string;
}

/**
 * An agent: given the conversation so far and the tools, produce the next assistant message.
 * The episode owns the loop (tool calls, nudges, limits); an agent only answers turns.
 */
export interface Agent {
  readonly name: string;
  turn(request: TurnRequest): Promise<TurnResponse>;
  /** Release what the agent holds (connections). Optional; the caller that made it calls it. */
  close?(): Promise<void>;
}
