import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One tool call of a scripted completion. */
export interface ScriptedToolCall {
  /** @default `call_<request>_<index>` */
  readonly id?: string;
  readonly name: string;
  /** JSON text as the model sends it, or a value to be sent as its JSON. */
  readonly arguments: string | Readonly<Record<string, unknown>>;
}

/** A 200 answer: a chat completion (or its stream, when the request asks for one). */
export interface ScriptedCompletion {
  readonly content?: string | null;
  readonly toolCalls?: readonly ScriptedToolCall[];
  /** Sent as `reasoning_content`. */
  readonly reasoning?: string;
  /** @default 'tool_calls' with tool calls, else 'stop' */
  readonly finishReason?: string | null;
  /** `null` sends no usage. @default {promptTokens: 100, completionTokens: 10} */
  readonly usage?: {
    readonly promptTokens: number;
    readonly completionTokens: number;
    readonly cachedTokens?: number;
    readonly reasoningTokens?: number;
  } | null;
  /** Sent as `choices[0].token_ids` (vLLM's `return_token_ids`). */
  readonly tokenIds?: readonly number[];
  /** Sent as `prompt_token_ids`. */
  readonly promptTokenIds?: readonly number[];
  /** Sent as `choices[0].logprobs.content[].logprob`, one per token id. */
  readonly logprobs?: readonly number[];
  /** @default 'scripted-model' */
  readonly model?: string;
  /** Wait this long before answering, in milliseconds (a slow model). */
  readonly delayMs?: number;
  readonly headers?: Readonly<Record<string, string>>;
}

/** An error status (429, 500, 401, …) with its headers (`retry-after`, `retry-after-ms`). */
export interface ScriptedError {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** @default `{"error": {"message": "scripted <status>", "type": "scripted"}}` */
  readonly body?: unknown;
  readonly delayMs?: number;
}

/**
 * The connection is destroyed: `before_headers` right after the request is read (a reset),
 * `mid_body` after the status line and part of the body (a stream: its first chunk).
 */
export interface ScriptedDrop {
  readonly drop: 'before_headers' | 'mid_body';
  readonly delayMs?: number;
}

/** Any body, as it is (a broken server). */
export interface ScriptedRaw {
  readonly raw: string;
  /** @default 200 */
  readonly status?: number;
  /** @default 'application/json' */
  readonly contentType?: string;
}

/** What the server answers one request with; a function chooses from the request. */
export type ScriptedReply =
  | ScriptedCompletion
  | ScriptedError
  | ScriptedDrop
  | ScriptedRaw
  | ((request: RecordedRequest) => ScriptedCompletion | ScriptedError | ScriptedDrop | ScriptedRaw);

/** A request as the server received it. */
export interface RecordedRequest {
  /** From 0, in arrival order. */
  readonly index: number;
  readonly method: string;
  readonly path: string;
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON body, or null when it was not JSON. */
  readonly body: Record<string, unknown> | null;
  /** The raw body text. */
  readonly text: string;
  /** When the request's body was complete: `performance.timeOrigin + performance.now()`, in ms. */
  readonly receivedAt: number;
  /** True once the client closed the connection before the answer was complete (a cancelled request). */
  readonly closedByClient: boolean;
}

export interface ScriptedModelServerOptions {
  /** The replies, in order: the n-th request gets the n-th reply. More can be pushed later. */
  readonly replies?: readonly ScriptedReply[];
}

export interface ScriptedModelServer {
  /** The base URL to give an agent: `http://127.0.0.1:<port>/v1`. */
  readonly url: string;
  /** Every request so far, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** Replies not used yet. */
  readonly pending: number;
  /** Append replies to the script. */
  push(...replies: readonly ScriptedReply[]): void;
  /** Stop listening and drop every open connection. */
  close(): Promise<void>;
}

/** A completion with text only. */
export function textReply(
  content: string,
  extra: Omit<ScriptedCompletion, 'content'> = {},
): ScriptedCompletion {
  return { content, ...extra };
}

/** A completion with one tool call (`arguments` sent as JSON). */
export function toolCallReply(
  name: string,
  args: string | Readonly<Record<string, unknown>>,
  extra: Omit<ScriptedCompletion, 'toolCalls'> = {},
): ScriptedCompletion {
  return { content: null, toolCalls: [{ name, arguments: args }], ...extra };
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;

/**
 * Start a chat-completions server on 127.0.0.1 (a free port) that answers
 * `POST /v1/chat/completions` with the scripted replies in order, non-streaming or as
 * server-sent events when the request has `"stream": true`. A request past the end of the
 * script gets a 400 naming it (an agent does not retry a 400), any other path a 404.
 */
export async function createScriptedModelServer(
  options: ScriptedModelServerOptions = {},
): Promise<ScriptedModelServer> {
  const script: ScriptedReply[] = [...(options.replies ?? [])];
  const requests: (RecordedRequest & { closedByClient: boolean })[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown> | null = null;
      try {
        // eslint-disable-next-line no-restricted-syntax -- a test server reading its own client's bounded body
        const parsed: unknown = JSON.parse(text);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
          body = parsed as Record<string, unknown>;
        }
      } catch {
        body = null;
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const record = {
        index: requests.length,
        method: req.method ?? '',
        path: (req.url ?? '').split('?')[0] ?? '',
        headers,
        body,
        text,
        receivedAt: performance.timeOrigin + performance.now(),
        closedByClient: false,
      };
      requests.push(record);
      res.on('close', () => {
        if (!res.writableFinished) record.closedByClient = true;
      });
      if (record.method !== 'POST' || record.path !== '/v1/chat/completions') {
        sendJson(res, 404, { error: { message: `no such endpoint: ${record.method} ${record.path}` } });
        return;
      }
      const next = script.shift();
      if (next === undefined) {
        sendJson(res, 400, {
          error: {
            message: `scripted model server: no scripted reply left for request ${record.index}`,
            type: 'scripted',
          },
        });
        return;
      }
      const reply = typeof next === 'function' ? next(record) : next;
      const delayMs = 'delayMs' in reply ? (reply.delayMs ?? 0) : 0;
      const timer = setTimeout(() => {
        answer(res, reply, record);
      }, delayMs);
      res.on('close', () => {
        clearTimeout(timer);
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    get pending() {
      return script.length;
    },
    push(...replies) {
      script.push(...replies);
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
}

function sendJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function answer(
  res: http.ServerResponse,
  reply: ScriptedCompletion | ScriptedError | ScriptedDrop | ScriptedRaw,
  request: RecordedRequest,
): void {
  if (res.destroyed) return;
  if ('drop' in reply) {
    if (reply.drop === 'before_headers') {
      res.socket?.destroy();
      return;
    }
    res.writeHead(200, {
      'content-type': request.body?.['stream'] === true ? 'text/event-stream' : 'application/json',
    });
    res.write(
      request.body?.['stream'] === true
        ? 'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "par'
        : '{"id": "chatcmpl-drop", "choi',
    );
    // Flushed first, so the client has the status and part of the body when the socket goes.
    setTimeout(() => res.socket?.destroy(), 20);
    return;
  }
  if ('raw' in reply) {
    res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType ?? 'application/json' });
    res.end(reply.raw);
    return;
  }
  if ('status' in reply) {
    sendJson(
      res,
      reply.status,
      reply.body ?? { error: { message: `scripted ${reply.status}`, type: 'scripted' } },
      { ...reply.headers },
    );
    return;
  }
  const completion = completionOf(reply, request.index);
  if (request.body?.['stream'] === true) {
    const options = request.body['stream_options'];
    const includeUsage =
      typeof options === 'object' &&
      options !== null &&
      (options as Record<string, unknown>)['include_usage'] === true;
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      ...reply.headers,
    });
    for (const chunk of chunksOf(completion, includeUsage)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    res.end('data: [DONE]\n\n');
    return;
  }
  sendJson(res, 200, completion, { ...reply.headers });
}

type Json = Record<string, unknown>;

function completionOf(reply: ScriptedCompletion, index: number): Json {
  const calls = (reply.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `call_${index}_${i}`,
    type: 'function',
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
  const message: Json = { role: 'assistant', content: reply.content ?? null };
  if (calls.length > 0) message['tool_calls'] = calls;
  if (reply.reasoning !== undefined) message['reasoning_content'] = reply.reasoning;
  const choice: Json = {
    index: 0,
    message,
    finish_reason:
      reply.finishReason === undefined ? (calls.length > 0 ? 'tool_calls' : 'stop') : reply.finishReason,
  };
  if (reply.tokenIds !== undefined) choice['token_ids'] = reply.tokenIds;
  if (reply.logprobs !== undefined) {
    choice['logprobs'] = {
      content: reply.logprobs.map((logprob, i) => ({
        token: `token_id:${reply.tokenIds?.[i] ?? i}`,
        logprob,
        bytes: null,
        top_logprobs: [],
      })),
    };
  }
  const out: Json = {
    id: `chatcmpl-scripted-${index}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: reply.model ?? 'scripted-model',
    choices: [choice],
  };
  const usage = reply.usage === undefined ? { promptTokens: 100, completionTokens: 10 } : reply.usage;
  if (usage !== null) {
    out['usage'] = {
      prompt_tokens: usage.promptTokens,
      completion_tokens: usage.completionTokens,
      total_tokens: usage.promptTokens + usage.completionTokens,
      ...(usage.cachedTokens === undefined
        ? {}
        : { prompt_tokens_details: { cached_tokens: usage.cachedTokens } }),
      ...(usage.reasoningTokens === undefined
        ? {}
        : { completion_tokens_details: { reasoning_tokens: usage.reasoningTokens } }),
    };
  }
  if (reply.promptTokenIds !== undefined) out['prompt_token_ids'] = reply.promptTokenIds;
  return out;
}

/** The completion as stream chunks: text, reasoning and each tool call's arguments in two halves. */
function chunksOf(completion: Json, includeUsage: boolean): Json[] {
  const base = {
    id: completion['id'],
    object: 'chat.completion.chunk',
    created: completion['created'],
    model: completion['model'],
  };
  const choice = (completion['choices'] as Json[])[0]!;
  const message = choice['message'] as Json;
  const chunk = (delta: Json, extra: Json = {}): Json => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: null, ...extra }],
  });
  const halves = (text: string): [string, string] => [
    text.slice(0, Math.ceil(text.length / 2)),
    text.slice(Math.ceil(text.length / 2)),
  ];
  const out: Json[] = [];
  const ids = choice['token_ids'] as number[] | undefined;
  const logprobs = (choice['logprobs'] as { content: unknown[] } | undefined)?.content;
  const first: Json = { ...base, choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] };
  if (completion['prompt_token_ids'] !== undefined)
    first['prompt_token_ids'] = completion['prompt_token_ids'];
  out.push(first);
  if (typeof message['reasoning_content'] === 'string') {
    for (const part of halves(message['reasoning_content'])) out.push(chunk({ reasoning_content: part }));
  }
  if (typeof message['content'] === 'string') {
    for (const part of halves(message['content'])) out.push(chunk({ content: part }));
  }
  for (const [index, call] of ((message['tool_calls'] as Json[] | undefined) ?? []).entries()) {
    const fn = call['function'] as { name: string; arguments: string };
    const [a, b] = halves(fn.arguments);
    out.push(
      chunk({
        tool_calls: [{ index, id: call['id'], type: 'function', function: { name: fn.name, arguments: a } }],
      }),
    );
    out.push(chunk({ tool_calls: [{ index, function: { arguments: b } }] }));
  }
  // Token ids and logprobs ride on the last content chunk, split like vLLM's deltas.
  const last: Json = { index: 0, delta: {}, finish_reason: choice['finish_reason'] };
  if (ids !== undefined) {
    const [head, tail] = [ids.slice(0, Math.ceil(ids.length / 2)), ids.slice(Math.ceil(ids.length / 2))];
    const headChoice: Json = { index: 0, delta: {}, finish_reason: null, token_ids: head };
    const tailLogprobs = logprobs?.slice(Math.ceil(ids.length / 2));
    if (logprobs !== undefined)
      headChoice['logprobs'] = { content: logprobs.slice(0, Math.ceil(ids.length / 2)) };
    out.push({ ...base, choices: [headChoice] });
    last['token_ids'] = tail;
    if (tailLogprobs !== undefined) last['logprobs'] = { content: tailLogprobs };
  } else if (logprobs !== undefined) {
    last['logprobs'] = { content: logprobs };
  }
  out.push({ ...base, choices: [last] });
  if (includeUsage && completion['usage'] !== undefined)
    out.push({ ...base, choices: [], usage: completion['usage'] });
  return out;
}
