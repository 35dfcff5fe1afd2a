// The chat-completions wire format, both ways: the conversation as request messages, and a
// server's answer (a completion, or the chunks of a stream) as a turn. Pure functions; no I/O.
import type { AssistantMessage, ContentPart, Message, ToolCall, ToolSpec } from './messages.js';
import type { FinishReason, TurnTokens, TurnUsage } from './turn.js';

type Json = Record<string, unknown>;

/** How the conversation goes out. */
export interface WireOptions {
  /** `send`: assistant messages carry their `reasoning_content` back to the server. */
  readonly reasoningHistory: 'drop' | 'send';
  /**
   * `user_message`: the images of a turn's tool results go in one user message after them
   * (chat-completions tool messages take text only); `tool_message`: as `image_url` parts of
   * the tool message itself, for servers that take them there.
   */
  readonly toolImages: 'user_message' | 'tool_message';
}

function imagePart(part: Extract<ContentPart, { type: 'image' }>): Json {
  return { type: 'image_url', image_url: { url: `data:${part.mediaType};base64,${part.dataBase64}` } };
}

/** The conversation as chat-completions request messages. */
export function toWireMessages(conversation: readonly Message[], options: WireOptions): Json[] {
  const out: Json[] = [];
  let pendingImages: Json[] = [];
  const flushImages = (): void => {
    if (pendingImages.length === 0) return;
    out.push({
      role: 'user',
      content: [{ type: 'text', text: 'The images returned by the tool calls above:' }, ...pendingImages],
    });
    pendingImages = [];
  };
  for (const message of conversation) {
    if (message.role !== 'tool') flushImages();
    switch (message.role) {
      case 'system':
      case 'user':
        out.push({ role: message.role, content: message.content });
        break;
      case 'assistant': {
        const calls = message.tool_calls ?? [];
        // A null content without tool calls (an empty turn kept in the history) is refused by
        // strict servers: it goes out as an empty string.
        const wire: Json = {
          role: 'assistant',
          content: message.content ?? (calls.length > 0 ? null : ''),
        };
        if (calls.length > 0) wire['tool_calls'] = calls;
        if (
          options.reasoningHistory === 'send' &&
          typeof message.reasoning_content === 'string' &&
          message.reasoning_content !== ''
        ) {
          wire['reasoning_content'] = message.reasoning_content;
        }
        out.push(wire);
        break;
      }
      case 'tool': {
        if (typeof message.content === 'string') {
          out.push({ role: 'tool', tool_call_id: message.tool_call_id, content: message.content });
          break;
        }
        const parts: Json[] = [];
        for (const part of message.content) {
          if (part.type === 'text') parts.push({ type: 'text', text: part.text });
          else if (options.toolImages === 'tool_message') parts.push(imagePart(part));
          else {
            parts.push({ type: 'text', text: '[image: in the next user message]' });
            pendingImages.push(imagePart(part));
          }
        }
        out.push({ role: 'tool', tool_call_id: message.tool_call_id, content: parts });
        break;
      }
    }
  }
  flushImages();
  return out;
}

/** The tools as chat-completions tool specs. */
export function toWireTools(tools: readonly ToolSpec[]): Json[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/** A server's answer that is not a chat completion. */
export class InvalidCompletion {
  constructor(readonly message: string) {}
}

/** A turn as read from a completion, before timing. */
export interface ParsedCompletion {
  readonly message: AssistantMessage;
  readonly finishReason: FinishReason;
  readonly providerFinishReason: string | null;
  readonly usage?: TurnUsage;
  readonly tokens?: TurnTokens;
  readonly model?: string;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function tokenIds(value: unknown): number[] | undefined {
  if (!Array.isArray(value)) return undefined;
  for (const id of value)
    if (!(typeof id === 'number' && Number.isSafeInteger(id) && id >= 0)) return undefined;
  return value as number[];
}

const FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  stop: 'stop',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  length: 'length',
  content_filter: 'content_filter',
};

function textOf(content: unknown): string | null {
  if (typeof content === 'string') return content;
  // Some servers answer with content parts; their text is the message's text.
  if (Array.isArray(content)) {
    const texts = content.flatMap((part) =>
      isObject(part) && typeof part['text'] === 'string' ? [part['text']] : [],
    );
    return texts.length > 0 ? texts.join('') : null;
  }
  return null;
}

function toolCallsOf(value: unknown, turnIndex: number): ToolCall[] {
  if (!Array.isArray(value)) return [];
  const calls: ToolCall[] = [];
  const seen = new Set<string>();
  for (const [index, raw] of value.entries()) {
    if (!isObject(raw)) continue;
    const fn = isObject(raw['function']) ? raw['function'] : {};
    const args = fn['arguments'];
    const sent = raw['id'];
    // A call without an id, or with an unusable or repeated one, gets its own: each tool
    // result must name exactly one call, or the next request is refused.
    const id =
      typeof sent === 'string' && sent.length > 0 && sent.length <= 256 && !seen.has(sent)
        ? sent
        : `call_karotte_${turnIndex}_${index}`;
    seen.add(id);
    calls.push({
      id,
      type: 'function',
      function: {
        name: typeof fn['name'] === 'string' ? fn['name'] : '',
        // Arguments sent as an object instead of JSON text are taken as that JSON.
        arguments: typeof args === 'string' ? args : args === undefined ? '' : JSON.stringify(args),
      },
    });
  }
  return calls;
}

/**
 * Read a chat completion (or one rebuilt from a stream) as a turn: the first choice's
 * message, its finish reason, the usage and, when the server returns them, the token ids
 * (vLLM `return_token_ids`: `prompt_token_ids`, `choices[0].token_ids`) and logprobs
 * (`choices[0].logprobs.content[].logprob`; with vLLM's `return_tokens_as_token_ids` the ids
 * are read from the `token_id:<n>` tokens when `token_ids` is missing).
 */
export function parseCompletion(data: unknown, turnIndex: number): ParsedCompletion | InvalidCompletion {
  if (!isObject(data)) return new InvalidCompletion('the answer is not a JSON object');
  const choices = data['choices'];
  const choice: unknown = Array.isArray(choices) ? choices[0] : undefined;
  if (!isObject(choice)) return new InvalidCompletion('the answer has no choices');
  const raw = isObject(choice['message']) ? choice['message'] : {};
  const content = textOf(raw['content']);
  const reasoning =
    typeof raw['reasoning_content'] === 'string'
      ? raw['reasoning_content']
      : typeof raw['reasoning'] === 'string'
        ? raw['reasoning']
        : null;
  const calls = toolCallsOf(raw['tool_calls'], turnIndex);
  const message: AssistantMessage = {
    role: 'assistant',
    content,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...(reasoning !== null && reasoning !== '' ? { reasoning_content: reasoning } : {}),
  };
  const provider = typeof choice['finish_reason'] === 'string' ? choice['finish_reason'] : null;
  const finishReason: FinishReason =
    provider === null ? (calls.length > 0 ? 'tool_calls' : 'other') : (FINISH_REASONS[provider] ?? 'other');
  const out: {
    -readonly [K in keyof ParsedCompletion]: ParsedCompletion[K];
  } = { message, finishReason, providerFinishReason: provider };
  const usage = data['usage'];
  if (isObject(usage)) {
    const input = count(usage['prompt_tokens']);
    const output = count(usage['completion_tokens']);
    if (input !== undefined && output !== undefined) {
      const cached = isObject(usage['prompt_tokens_details'])
        ? count(usage['prompt_tokens_details']['cached_tokens'])
        : undefined;
      const reasoningTokens = isObject(usage['completion_tokens_details'])
        ? count(usage['completion_tokens_details']['reasoning_tokens'])
        : undefined;
      out.usage = {
        inputTokens: input,
        outputTokens: output,
        ...(cached === undefined ? {} : { cachedInputTokens: cached }),
        ...(reasoningTokens === undefined ? {} : { reasoningTokens }),
      };
    }
  }
  const tokens = tokensOf(data, choice);
  if (tokens !== undefined) out.tokens = tokens;
  if (typeof data['model'] === 'string') out.model = data['model'];
  return out;
}

function tokensOf(data: Json, choice: Json): TurnTokens | undefined {
  const entries =
    isObject(choice['logprobs']) && Array.isArray(choice['logprobs']['content'])
      ? (choice['logprobs']['content'] as unknown[])
      : undefined;
  let logprobs: number[] | undefined;
  let idsFromTokens: number[] | undefined;
  if (entries !== undefined) {
    logprobs = [];
    idsFromTokens = [];
    for (const entry of entries) {
      const logprob = isObject(entry) ? entry['logprob'] : undefined;
      if (typeof logprob !== 'number') {
        logprobs = undefined;
        break;
      }
      logprobs.push(logprob);
      const token = isObject(entry) ? entry['token'] : undefined;
      const match = typeof token === 'string' ? /^token_id:(\d+)$/.exec(token) : null;
      if (match === null) idsFromTokens = undefined;
      else idsFromTokens?.push(Number(match[1]));
    }
  }
  const completionIds = tokenIds(choice['token_ids']) ?? idsFromTokens;
  if (completionIds === undefined) return undefined;
  const promptIds = tokenIds(data['prompt_token_ids']);
  return {
    ...(promptIds === undefined ? {} : { promptIds }),
    completionIds,
    ...(logprobs === undefined || logprobs.length !== completionIds.length ? {} : { logprobs }),
  };
}

/**
 * Rebuilds a chat completion from the chunks of a stream (`stream: true`), the shape
 * {@link parseCompletion} reads: content and reasoning deltas joined, tool calls assembled by
 * index, the finish reason, usage (`stream_options.include_usage`), token ids and logprobs.
 */
export class StreamAccumulator {
  private content = '';
  private hasContent = false;
  private reasoning = '';
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();
  private finishReason: string | null = null;
  private usage: unknown;
  private model: string | undefined;
  private promptIds: unknown;
  private readonly tokenIds: unknown[] = [];
  private hasTokenIds = false;
  private readonly logprobs: unknown[] = [];
  private hasLogprobs = false;

  add(chunk: unknown): void {
    if (!isObject(chunk)) return;
    if (typeof chunk['model'] === 'string') this.model = chunk['model'];
    if (isObject(chunk['usage'])) this.usage = chunk['usage'];
    if (Array.isArray(chunk['prompt_token_ids'])) this.promptIds = chunk['prompt_token_ids'];
    const choices = chunk['choices'];
    const choice: unknown = Array.isArray(choices) ? choices[0] : undefined;
    if (!isObject(choice)) return;
    if (typeof choice['finish_reason'] === 'string') this.finishReason = choice['finish_reason'];
    if (Array.isArray(choice['token_ids'])) {
      this.hasTokenIds = true;
      this.tokenIds.push(...(choice['token_ids'] as unknown[]));
    }
    if (isObject(choice['logprobs']) && Array.isArray(choice['logprobs']['content'])) {
      this.hasLogprobs = true;
      this.logprobs.push(...(choice['logprobs']['content'] as unknown[]));
    }
    const delta = isObject(choice['delta']) ? choice['delta'] : {};
    if (typeof delta['content'] === 'string') {
      this.hasContent = true;
      this.content += delta['content'];
    }
    const reasoning = delta['reasoning_content'] ?? delta['reasoning'];
    if (typeof reasoning === 'string') this.reasoning += reasoning;
    if (Array.isArray(delta['tool_calls'])) {
      for (const [position, raw] of delta['tool_calls'].entries()) {
        if (!isObject(raw)) continue;
        const index = typeof raw['index'] === 'number' ? raw['index'] : position;
        const call = this.calls.get(index) ?? { id: '', name: '', arguments: '' };
        if (typeof raw['id'] === 'string') call.id = raw['id'];
        const fn = isObject(raw['function']) ? raw['function'] : {};
        if (typeof fn['name'] === 'string') call.name += fn['name'];
        if (typeof fn['arguments'] === 'string') call.arguments += fn['arguments'];
        this.calls.set(index, call);
      }
    }
  }

  /** The completion the chunks add up to. */
  completion(): Json {
    const calls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      }));
    const message: Json = { role: 'assistant', content: this.hasContent ? this.content : null };
    if (calls.length > 0) message['tool_calls'] = calls;
    if (this.reasoning !== '') message['reasoning_content'] = this.reasoning;
    const choice: Json = { index: 0, message, finish_reason: this.finishReason };
    if (this.hasTokenIds) choice['token_ids'] = this.tokenIds;
    if (this.hasLogprobs) choice['logprobs'] = { content: this.logprobs };
    const out: Json = { object: 'chat.completion', choices: [choice] };
    if (this.model !== undefined) out['model'] = this.model;
    if (this.usage !== undefined) out['usage'] = this.usage;
    if (this.promptIds !== undefined) out['prompt_token_ids'] = this.promptIds;
    return out;
  }
}
