import { parseOptions } from '@karotte/base';
// The SDK is imported when an agent is made (createOpenAIAgent), not when this package is: a
// replay episode, `karotte --version` or a trainer using only the scripted server never loads it.
import type OpenAI from 'openai';

type Sdk = typeof import('openai');
import { z } from 'zod';
import { readApiKey } from './api-key.js';
import {
  InvalidCompletion,
  StreamAccumulator,
  parseCompletion,
  toWireMessages,
  toWireTools,
  type ParsedCompletion,
} from './completion.js';
import { AgentError } from './errors.js';
import {
  causeCodes,
  kindOfConnectionFailure,
  kindOfStatus,
  mayRetry,
  parseRetryAfter,
  retryDelayMs,
  retryPolicySchema,
  waitFor,
  type AttemptFailure,
  type FailureCounts,
  type RetryPolicy,
} from './retry.js';
import type { Agent, RetryNotice, TurnRequest, TurnResponse } from './turn.js';

/** Body fields the agent sets itself; `extraBody` may not replace them. */
const RESERVED_BODY_FIELDS = ['model', 'messages', 'tools', 'stream', 'stream_options'] as const;

/** Headers the agent sets itself (the key comes from `apiKeyEnv` / `apiKeyFile` only). */
const RESERVED_HEADERS = ['authorization', 'content-type', 'content-length', 'host'];

const envNameSchema = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
  .max(256);

/** Sampling settings, sent as the chat-completions fields in parentheses. */
export const samplingSchema = z
  .object({
    /** (`temperature`) */
    temperature: z.number().min(0).max(2).optional(),
    /** (`top_p`) */
    topP: z.number().gt(0).max(1).optional(),
    /** The most tokens a completion may have (`max_tokens`, which vLLM and SGLang read). */
    maxTokens: z.number().int().positive().max(10_000_000).optional(),
    /** The most tokens a completion may have (`max_completion_tokens`, which OpenAI's reasoning models need). */
    maxCompletionTokens: z.number().int().positive().max(10_000_000).optional(),
    /** (`seed`) */
    seed: z.number().int().optional(),
    /** (`stop`) */
    stop: z.array(z.string().min(1).max(1024)).max(16).optional(),
    /** (`presence_penalty`) */
    presencePenalty: z.number().min(-2).max(2).optional(),
    /** (`frequency_penalty`) */
    frequencyPenalty: z.number().min(-2).max(2).optional(),
  })
  .strict();

/** Options of {@link createOpenAIAgent}: strict, so a misspelled key fails instead of vanishing. */
export const openAIAgentOptionsSchema = z
  .object({
    /** The model, as the server names it (`--model`). */
    model: z.string().min(1).max(1024),
    /** The API's base URL, up to `/v1`: requests go to `<baseURL>/chat/completions`. */
    baseURL: z.url({ protocol: /^https?$/ }).max(4096),
    /**
     * The agent's name in the transcript and the result.
     * @default 'openai'
     */
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]*$/)
      .max(128)
      .default('openai'),
    /**
     * The environment variable holding the API key (when no `apiKeyFile` is given).
     * @default 'OPENAI_API_KEY'
     */
    apiKeyEnv: envNameSchema.optional(),
    /** A file holding the API key, owned by this process's user and private to it (mode 0600 or 0400). */
    apiKeyFile: z.string().min(1).max(4096).optional(),
    /** Sampling settings. @default {} */
    sampling: samplingSchema.default({}),
    /** (`reasoning_effort`) for reasoning models: `minimal`, `low`, `medium`, `high`, or the server's own level. */
    reasoningEffort: z
      .string()
      .regex(/^[a-z][a-z_-]*$/)
      .max(32)
      .optional(),
    /**
     * (`tool_choice`) when the episode offers tools.
     * @default 'auto'
     */
    toolChoice: z.enum(['auto', 'required', 'none']).default('auto'),
    /** (`parallel_tool_calls`); the server's default when absent. */
    parallelToolCalls: z.boolean().optional(),
    /**
     * More body fields, sent as they are: for vLLM `{"return_token_ids": true, "logprobs": true}`
     * (token ids and logprobs are then recorded), `top_k`, `chat_template_kwargs`, … They may
     * override the sampling fields, never `model`, `messages`, `tools`, `stream`.
     * @default {}
     */
    extraBody: z.record(z.string().min(1).max(256), z.json()).default({}),
    /** More request headers (a session-affinity header, …); never `Authorization`. @default {} */
    headers: z
      .record(
        z.string().regex(/^[A-Za-z0-9-]+$/),
        z
          .string()
          .regex(/^[\x20-\x7e]*$/)
          .max(8192),
      )
      .default({}),
    /**
     * One request's time limit, in milliseconds; a request past it is a failed attempt (retried).
     * @default 300000
     */
    timeoutMs: z.number().int().min(1).max(3_600_000).default(300_000),
    /** The retry policy (`retryPolicySchema`). @default {} */
    retry: retryPolicySchema.default(retryPolicySchema.parse({})),
    /**
     * Stream the completion (server-sent events) and rebuild it; the turn is the same.
     * @default false
     */
    stream: z.boolean().default(false),
    /**
     * Whether an assistant message's `reasoning_content` goes back to the server in later
     * turns (`drop`: never; DeepSeek refuses it, vLLM ignores it; `send`: for models that need
     * their reasoning back).
     * @default 'drop'
     */
    reasoningHistory: z.enum(['drop', 'send']).default('drop'),
    /**
     * Where the images of tool results go: `user_message` (one user message after the turn's
     * tool messages, which take text only in chat completions) or `tool_message`.
     * @default 'user_message'
     */
    toolImages: z.enum(['user_message', 'tool_message']).default('user_message'),
  })
  .strict()
  .superRefine((options, context) => {
    if (options.apiKeyEnv !== undefined && options.apiKeyFile !== undefined) {
      context.addIssue({
        code: 'custom',
        path: ['apiKeyFile'],
        message: 'give apiKeyEnv or apiKeyFile, not both',
      });
    }
    for (const field of RESERVED_BODY_FIELDS) {
      if (Object.hasOwn(options.extraBody, field)) {
        context.addIssue({
          code: 'custom',
          path: ['extraBody', field],
          message: `${field} is set by the agent and cannot be overridden`,
        });
      }
    }
    for (const name of Object.keys(options.headers)) {
      if (RESERVED_HEADERS.includes(name.toLowerCase())) {
        context.addIssue({
          code: 'custom',
          path: ['headers', name],
          message: `${name} is set by the agent (the API key comes from apiKeyEnv or apiKeyFile)`,
        });
      }
    }
  });

export type OpenAIAgentOptions = z.input<typeof openAIAgentOptionsSchema>;
type Options = z.output<typeof openAIAgentOptionsSchema>;

/**
 * An agent on an OpenAI-compatible chat-completions endpoint (`POST <baseURL>/chat/completions`:
 * vLLM, SGLang, hosted APIs), through the official `openai` SDK with the SDK's retries off and
 * the agent's own policy instead: 429, 5xx, 408/409, timeouts and dropped connections are
 * retried with jittered exponential backoff (a server's `retry-after-ms` / `retry-after` is
 * honoured up to `retry.retryAfterCapMs`), 401/403 at most `retry.authAttempts` times, an
 * endpoint where nothing listens at most `retry.unreachableAttempts` times; any other status
 * fails at once. The turn's `abortSignal` stops a request in flight and a backoff. An endpoint
 * that keeps failing is an `AGENT_FAILED` error carrying the last HTTP status.
 *
 * The API key is read once, here, from `apiKeyFile` or the environment variable `apiKeyEnv`
 * (default `OPENAI_API_KEY`); it is sent as `Authorization: Bearer`, and never appears in a
 * turn, a retry notice or an error message.
 *
 * @throws BadArgumentError on invalid options or an API key that cannot be had, naming the field.
 */
export async function createOpenAIAgent(options: OpenAIAgentOptions): Promise<Agent> {
  const parsed = parseOptions(openAIAgentOptionsSchema, options, 'openai agent options');
  const apiKey = await readApiKey(parsed);
  const sdk = await import('openai');
  return new OpenAIAgent(parsed, apiKey, sdk);
}

class OpenAIAgent implements Agent {
  readonly name: string;
  private readonly client: OpenAI;
  private readonly policy: RetryPolicy;
  private readonly fixedBody: Record<string, unknown>;

  constructor(
    private readonly options: Options,
    private readonly apiKey: string,
    private readonly sdk: Sdk,
  ) {
    this.name = options.name;
    this.policy = options.retry;
    // Every setting the SDK would otherwise read from the environment is given: nothing of the
    // harness's environment (OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_LOG, …) changes a request.
    this.client = new sdk.OpenAI({
      apiKey,
      adminAPIKey: null,
      organization: null,
      project: null,
      webhookSecret: null,
      baseURL: options.baseURL,
      maxRetries: 0,
      timeout: options.timeoutMs,
      logLevel: 'off',
      defaultHeaders: options.headers,
    });
    const sampling = options.sampling;
    this.fixedBody = {
      ...(sampling.temperature === undefined ? {} : { temperature: sampling.temperature }),
      ...(sampling.topP === undefined ? {} : { top_p: sampling.topP }),
      ...(sampling.maxTokens === undefined ? {} : { max_tokens: sampling.maxTokens }),
      ...(sampling.maxCompletionTokens === undefined
        ? {}
        : { max_completion_tokens: sampling.maxCompletionTokens }),
      ...(sampling.seed === undefined ? {} : { seed: sampling.seed }),
      ...(sampling.stop === undefined ? {} : { stop: sampling.stop }),
      ...(sampling.presencePenalty === undefined ? {} : { presence_penalty: sampling.presencePenalty }),
      ...(sampling.frequencyPenalty === undefined ? {} : { frequency_penalty: sampling.frequencyPenalty }),
      ...(options.reasoningEffort === undefined ? {} : { reasoning_effort: options.reasoningEffort }),
      ...options.extraBody,
    };
  }

  async turn(request: TurnRequest): Promise<TurnResponse> {
    const body = this.body(request);
    const started = performance.now();
    const counts: FailureCounts = { total: 0, auth: 0, unreachable: 0 };
    for (;;) {
      this.throwIfAborted(request.abortSignal, counts.total);
      const attemptStarted = performance.now();
      let failure: AttemptFailure;
      try {
        const { outcome, requestId } = await this.attempt(body, request);
        if (!(outcome instanceof InvalidCompletion)) {
          return {
            ...outcome,
            timing: {
              modelMs: Math.round(performance.now() - attemptStarted),
              retryWaitMs: Math.round(attemptStarted - started),
            },
            attempts: counts.total + 1,
            ...(requestId === undefined ? {} : { requestId }),
          };
        }
        // A 200 whose body is no chat completion: the server is broken, not busy.
        failure = { kind: 'fatal', httpStatus: 200, retryAfterMs: null, message: outcome.message };
      } catch (error) {
        this.throwIfAborted(request.abortSignal, counts.total + 1, error);
        failure = this.classify(error);
      }
      const attemptMs = Math.round(performance.now() - attemptStarted);
      counts.total += 1;
      if (failure.kind === 'auth') counts.auth += 1;
      if (failure.kind === 'unreachable') counts.unreachable += 1;
      if (!mayRetry(this.policy, failure, counts)) {
        const times = counts.total === 1 ? 'once' : `${counts.total} times`;
        const retryable = failure.kind === 'fatal' ? ', not retryable' : '';
        const status = failure.httpStatus === null ? '' : ` (last HTTP status ${failure.httpStatus})`;
        throw new AgentError(
          'AGENT_FAILED',
          `the model endpoint failed ${times}${retryable}${status}: ${failure.message}`,
          { httpStatus: failure.httpStatus, attempts: counts.total },
        );
      }
      const waitMs = retryDelayMs(this.policy, failure, counts.total);
      this.notify(request, {
        attempt: counts.total,
        kind: failure.kind,
        httpStatus: failure.httpStatus,
        attemptMs,
        waitMs,
        message: failure.message,
      });
      try {
        await waitFor(waitMs, request.abortSignal);
      } catch (error) {
        this.throwIfAborted(request.abortSignal, counts.total, error);
        throw error;
      }
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private body(request: TurnRequest): Record<string, unknown> {
    const body: Record<string, unknown> = {
      model: this.options.model,
      messages: toWireMessages(request.conversation, this.options),
      ...this.fixedBody,
    };
    if (request.tools.length > 0) {
      body['tools'] = toWireTools(request.tools);
      body['tool_choice'] ??= this.options.toolChoice;
      if (this.options.parallelToolCalls !== undefined) {
        body['parallel_tool_calls'] ??= this.options.parallelToolCalls;
      }
    }
    if (this.options.stream) {
      body['stream'] = true;
      body['stream_options'] = { include_usage: true };
    }
    return body;
  }

  /** One request, bounded by `timeoutMs` and the turn's signal. */
  private async attempt(
    body: Record<string, unknown>,
    request: TurnRequest,
  ): Promise<{ outcome: ParsedCompletion | InvalidCompletion; requestId: string | undefined }> {
    // The SDK's own timeout covers the wait for the response headers only; this one bounds a
    // streamed body too. Both are the same limit.
    const timer = new AbortController();
    const timeout = setTimeout(() => {
      timer.abort(new this.sdk.APIConnectionTimeoutError({ message: 'Request timed out.' }));
    }, this.options.timeoutMs);
    const signal = AbortSignal.any([request.abortSignal, timer.signal]);
    try {
      const requestOptions = { signal, timeout: this.options.timeoutMs, maxRetries: 0 };
      if (this.options.stream) {
        const stream = await this.client.chat.completions.create(
          body as unknown as OpenAI.Chat.ChatCompletionCreateParamsStreaming,
          requestOptions,
        );
        const accumulator = new StreamAccumulator();
        for await (const chunk of stream) accumulator.add(chunk);
        if (timer.signal.aborted) throw timer.signal.reason;
        return {
          outcome: parseCompletion(accumulator.completion(), request.turnIndex),
          requestId: stream._request_id ?? undefined,
        };
      }
      const completion = await this.client.chat.completions.create(
        body as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming,
        requestOptions,
      );
      return {
        outcome: parseCompletion(completion, request.turnIndex),
        requestId: completion._request_id ?? undefined,
      };
    } catch (error) {
      // Aborted by the timer: a timeout, whatever the SDK made of the abort.
      if (timer.signal.aborted && !request.abortSignal.aborted) throw timer.signal.reason;
      throw error;
    } finally {
      clearTimeout(timeout);
    }
  }

  private classify(error: unknown): AttemptFailure {
    if (error instanceof this.sdk.APIConnectionTimeoutError) {
      return {
        kind: 'timeout',
        httpStatus: null,
        retryAfterMs: null,
        message: `no complete answer within ${this.options.timeoutMs} ms`,
      };
    }
    if (error instanceof this.sdk.APIConnectionError) {
      const kind = kindOfConnectionFailure(error);
      const codes = [...new Set(causeCodes(error))].join(', ');
      return {
        kind,
        httpStatus: null,
        retryAfterMs: null,
        message: `${kind === 'unreachable' ? 'the endpoint is unreachable' : 'the connection failed'}${codes === '' ? '' : ` (${codes})`}: ${this.redact(error.message)}`,
      };
    }
    if (error instanceof this.sdk.APIError) {
      if (typeof error.status === 'number') {
        return {
          kind: kindOfStatus(error.status),
          httpStatus: error.status,
          retryAfterMs: parseRetryAfter(error.headers as Headers | undefined),
          message: this.redact(error.message),
        };
      }
      // An error event inside a stream: the server failed mid-answer.
      return { kind: 'server', httpStatus: null, retryAfterMs: null, message: this.redact(error.message) };
    }
    const message = error instanceof Error ? error.message : String(error);
    // A stream cut off mid-body surfaces as undici's own error (`terminated`), not the SDK's.
    const codes = causeCodes(error);
    if (message === 'terminated' || codes.some((code) => /^(ECONNRESET|EPIPE|UND_ERR_)/.test(code))) {
      return {
        kind: 'connection',
        httpStatus: null,
        retryAfterMs: null,
        message: `the connection failed mid-answer (${[...new Set(codes)].join(', ') || message})`,
      };
    }
    return { kind: 'fatal', httpStatus: null, retryAfterMs: null, message: this.redact(message) };
  }

  private notify(request: TurnRequest, notice: RetryNotice): void {
    try {
      request.onRetry?.(notice);
    } catch {
      // A listener that fails changes nothing about the retry.
    }
  }

  private throwIfAborted(signal: AbortSignal, attempts: number, cause?: unknown): void {
    if (!signal.aborted) return;
    throw new AgentError('ABORTED', 'the turn was cancelled', {
      attempts,
      cause: cause ?? signal.reason,
    });
  }

  /** `text` without the API key (a server may echo what it was sent). */
  private redact(text: string): string {
    const redacted = this.apiKey.length >= 4 ? text.replaceAll(this.apiKey, '[redacted]') : text;
    return redacted.length > 2000 ? `${redacted.slice(0, 2000)}…` : redacted;
  }
}
