// The OpenAI-compatible agent against a real HTTP server on loopback (the scripted model
// server of ./testing), through the real `openai` SDK: nothing between them is faked.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BadArgumentError } from '@karotte/base';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentError } from './errors.js';
import type { Message, ToolSpec } from './messages.js';
import { createOpenAIAgent, type OpenAIAgentOptions } from './openai.js';
import {
  createScriptedModelServer,
  textReply,
  toolCallReply,
  type ScriptedModelServer,
  type ScriptedReply,
} from './testing/index.js';
import type { RetryNotice, TurnRequest } from './turn.js';

const KEY_ENV = 'KAROTTE_TEST_OPENAI_KEY';
const KEY = 'sk-karotte-test-7f3a9c0e5b1d';
process.env[KEY_ENV] = KEY;

const servers: ScriptedModelServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

async function serve(...replies: ScriptedReply[]): Promise<ScriptedModelServer> {
  const server = await createScriptedModelServer({ replies });
  servers.push(server);
  return server;
}

const BASH: ToolSpec = {
  name: 'bash',
  description: 'run a command',
  parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

function request(overrides: Partial<TurnRequest> = {}): TurnRequest {
  return {
    conversation: [
      { role: 'system', content: 'You are in a shell.' },
      { role: 'user', content: 'Write 42 to answer.txt.' },
    ],
    tools: [BASH],
    remaining: { turns: 10, timeMs: 60_000 },
    turnIndex: 0,
    abortSignal: new AbortController().signal,
    ...overrides,
  };
}

function agentFor(server: ScriptedModelServer, options: Partial<OpenAIAgentOptions> = {}) {
  return createOpenAIAgent({
    model: 'scripted-model',
    baseURL: server.url,
    apiKeyEnv: KEY_ENV,
    // Fast backoff so the schedule is observable in a unit test: 100, 200, 400 ms (+ up to 50 %).
    retry: { initialDelayMs: 100, maxDelayMs: 2000 },
    ...options,
  });
}

/** Gaps between consecutive requests as the server saw them, in ms. */
function gaps(server: ScriptedModelServer): number[] {
  const times = server.requests.map((r) => r.receivedAt);
  return times.slice(1).map((t, i) => t - times[i]!);
}

describe('createOpenAIAgent: a turn', () => {
  it('sends the conversation, the tools, sampling, reasoning effort and extra body; reads tool calls, usage, token ids', async () => {
    const server = await serve(
      toolCallReply(
        'bash',
        { command: 'echo 42 > answer.txt' },
        {
          usage: { promptTokens: 321, completionTokens: 12, cachedTokens: 300, reasoningTokens: 4 },
          tokenIds: [11, 12, 13],
          promptTokenIds: [1, 2, 3, 4],
          logprobs: [-0.5, -0.25, -0.125],
          model: 'served-name',
          headers: { 'x-request-id': 'req_abc' },
        },
      ),
    );
    const agent = await agentFor(server, {
      sampling: { temperature: 0.7, topP: 0.9, maxTokens: 512, seed: 7, stop: ['<end>'] },
      reasoningEffort: 'high',
      extraBody: { return_token_ids: true, logprobs: true, top_k: 20 },
      headers: { 'x-session-affinity': 'episode-1' },
    });
    const response = await agent.turn(request());
    expect(response).toMatchObject({
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_0_0',
            type: 'function',
            function: { name: 'bash', arguments: '{"command":"echo 42 > answer.txt"}' },
          },
        ],
      },
      finishReason: 'tool_calls',
      providerFinishReason: 'tool_calls',
      usage: { inputTokens: 321, outputTokens: 12, cachedInputTokens: 300, reasoningTokens: 4 },
      tokens: { promptIds: [1, 2, 3, 4], completionIds: [11, 12, 13], logprobs: [-0.5, -0.25, -0.125] },
      model: 'served-name',
      requestId: 'req_abc',
      attempts: 1,
      timing: { retryWaitMs: 0 },
    });
    expect(response.timing.modelMs).toBeGreaterThanOrEqual(0);
    const [sent] = server.requests;
    expect(sent!.headers['authorization']).toBe(`Bearer ${KEY}`);
    expect(sent!.headers['x-session-affinity']).toBe('episode-1');
    expect(sent!.body).toMatchObject({
      model: 'scripted-model',
      messages: [
        { role: 'system', content: 'You are in a shell.' },
        { role: 'user', content: 'Write 42 to answer.txt.' },
      ],
      tools: [{ type: 'function', function: { name: 'bash', description: 'run a command' } }],
      tool_choice: 'auto',
      temperature: 0.7,
      top_p: 0.9,
      max_tokens: 512,
      seed: 7,
      stop: ['<end>'],
      reasoning_effort: 'high',
      return_token_ids: true,
      logprobs: true,
      top_k: 20,
    });
    expect(sent!.body).not.toHaveProperty('stream');
  });

  it('sends the history as strict servers take it: reasoning dropped, an empty answer as "", images after the tool messages', async () => {
    const server = await serve(textReply('done'), textReply('done'));
    const conversation: Message[] = [
      { role: 'user', content: 'look' },
      { role: 'assistant', content: null, reasoning_content: 'thinking…' },
      { role: 'user', content: 'nudge' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'view', arguments: '{}' } },
          { id: 'b', type: 'function', function: { name: 'bash', arguments: '{}' } },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'a',
        content: [
          { type: 'text', text: 'an image' },
          { type: 'image', mediaType: 'image/png', dataBase64: 'iVBORw0K' },
        ],
      },
      { role: 'tool', tool_call_id: 'b', content: '[exit code: 0]' },
    ];
    await (await agentFor(server)).turn(request({ conversation }));
    expect(server.requests[0]!.body!['messages']).toEqual([
      { role: 'user', content: 'look' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'nudge' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'view', arguments: '{}' } },
          { id: 'b', type: 'function', function: { name: 'bash', arguments: '{}' } },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'a',
        content: [
          { type: 'text', text: 'an image' },
          { type: 'text', text: '[image: in the next user message]' },
        ],
      },
      { role: 'tool', tool_call_id: 'b', content: '[exit code: 0]' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'The images returned by the tool calls above:' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } },
        ],
      },
    ]);
    // `send` and `tool_message`: reasoning goes back, images stay in the tool message.
    await (
      await agentFor(server, { reasoningHistory: 'send', toolImages: 'tool_message' })
    ).turn(request({ conversation }));
    const messages = server.requests[1]!.body!['messages'] as Record<string, unknown>[];
    expect(messages[1]).toEqual({ role: 'assistant', content: '', reasoning_content: 'thinking…' });
    expect(messages[4]!['content']).toEqual([
      { type: 'text', text: 'an image' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } },
    ]);
    expect(messages).toHaveLength(6);
  });

  it('returns malformed argument JSON, empty turns, length and content_filter finishes as the server sent them', async () => {
    const server = await serve(
      toolCallReply('bash', '{"command": "ls', { finishReason: 'length' }),
      { content: null, finishReason: 'length' },
      { content: null, reasoning: 'I should look first', finishReason: 'stop' },
      { content: 'I cannot help with that.', finishReason: 'content_filter' },
      { content: 'odd', finishReason: 'eos_token' },
    );
    const agent = await agentFor(server);
    const malformed = await agent.turn(request());
    expect(malformed.message.tool_calls?.[0]?.function.arguments).toBe('{"command": "ls');
    expect(malformed.finishReason).toBe('length');
    const cut = await agent.turn(request());
    expect(cut).toMatchObject({ message: { content: null }, finishReason: 'length' });
    expect(cut.message.tool_calls).toBeUndefined();
    const reasoning = await agent.turn(request());
    expect(reasoning.message).toEqual({
      role: 'assistant',
      content: null,
      reasoning_content: 'I should look first',
    });
    const filtered = await agent.turn(request());
    expect(filtered.finishReason).toBe('content_filter');
    const other = await agent.turn(request());
    expect(other).toMatchObject({ finishReason: 'other', providerFinishReason: 'eos_token' });
  });

  it('streams (server-sent events) into the same turn: text, tool calls, usage, token ids, logprobs', async () => {
    const reply = toolCallReply(
      'bash',
      { command: 'printf "%s" 42 > answer.txt' },
      {
        content: 'Writing it.',
        reasoning: 'simple',
        tokenIds: [5, 6, 7, 8],
        promptTokenIds: [1, 2],
        logprobs: [-1, -2, -3, -4],
        usage: { promptTokens: 50, completionTokens: 4 },
      },
    );
    const server = await serve(reply, reply);
    const streamed = await (await agentFor(server, { stream: true })).turn(request());
    const plain = await (await agentFor(server)).turn(request());
    expect(server.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(streamed.message).toEqual({
      role: 'assistant',
      content: 'Writing it.',
      reasoning_content: 'simple',
      tool_calls: [
        {
          id: 'call_0_0',
          type: 'function',
          function: { name: 'bash', arguments: JSON.stringify({ command: 'printf "%s" 42 > answer.txt' }) },
        },
      ],
    });
    expect(streamed.message.tool_calls?.[0]?.function.arguments).toBe(
      plain.message.tool_calls?.[0]?.function.arguments,
    );
    expect(streamed).toMatchObject({
      finishReason: 'tool_calls',
      usage: { inputTokens: 50, outputTokens: 4 },
      tokens: { promptIds: [1, 2], completionIds: [5, 6, 7, 8], logprobs: [-1, -2, -3, -4] },
    });
    expect(streamed.tokens).toEqual(plain.tokens);
  });
});

describe('createOpenAIAgent: retries (the schedule as the server saw it)', () => {
  it('429 with retry-after (seconds) waits that long, not the backoff', async () => {
    const server = await serve({ status: 429, headers: { 'retry-after': '1' } }, textReply('ok'));
    const notices: RetryNotice[] = [];
    const agent = await agentFor(server, { retry: { initialDelayMs: 5000 } });
    const response = await agent.turn(request({ onRetry: (n) => notices.push(n) }));
    expect(response.message.content).toBe('ok');
    expect(server.requests).toHaveLength(2);
    const [gap] = gaps(server);
    expect(gap).toBeGreaterThanOrEqual(990);
    expect(gap).toBeLessThan(2500);
    expect(notices).toEqual([
      expect.objectContaining({ attempt: 1, kind: 'rate_limit', httpStatus: 429, waitMs: 1000 }),
    ]);
    expect(response.attempts).toBe(2);
    expect(response.timing.retryWaitMs).toBeGreaterThanOrEqual(1000);
  });

  it('429 with retry-after-ms is honoured over retry-after, and a huge retry-after is capped', async () => {
    const server = await serve(
      { status: 429, headers: { 'retry-after-ms': '300', 'retry-after': '60' } },
      { status: 503, headers: { 'retry-after': '3600' } },
      textReply('ok'),
    );
    const notices: RetryNotice[] = [];
    const agent = await agentFor(server, { retry: { initialDelayMs: 5000, retryAfterCapMs: 400 } });
    await agent.turn(request({ onRetry: (n) => notices.push(n) }));
    const [first, second] = gaps(server);
    expect(first).toBeGreaterThanOrEqual(290);
    expect(first).toBeLessThan(1500);
    expect(second).toBeGreaterThanOrEqual(390);
    expect(second).toBeLessThan(1500);
    expect(notices.map((n) => [n.kind, n.httpStatus, n.waitMs])).toEqual([
      ['rate_limit', 429, 300],
      ['server', 503, 400],
    ]);
  });

  it('500s are retried with jittered exponential backoff: 100, 200, 400 ms (each up to +50 %)', async () => {
    const server = await serve({ status: 500 }, { status: 502 }, { status: 500 }, textReply('ok'));
    const notices: RetryNotice[] = [];
    const response = await (await agentFor(server)).turn(request({ onRetry: (n) => notices.push(n) }));
    expect(response.message.content).toBe('ok');
    expect(response.attempts).toBe(4);
    const observed = gaps(server);
    for (const [i, base] of [100, 200, 400].entries()) {
      expect(notices[i]!.waitMs).toBeGreaterThanOrEqual(base);
      expect(notices[i]!.waitMs).toBeLessThanOrEqual(base * 1.5);
      // Server-side: the wait plus one request's own time (loopback, a few ms).
      expect(observed[i]!).toBeGreaterThanOrEqual(notices[i]!.waitMs - 5);
      expect(observed[i]!).toBeLessThan(notices[i]!.waitMs + 400);
    }
    const waited = notices.reduce((sum, n) => sum + n.waitMs + n.attemptMs, 0);
    expect(response.timing.retryWaitMs).toBeGreaterThanOrEqual(waited - 5);
  });

  it('an endpoint that keeps failing is AGENT_FAILED with the last status, after maxAttempts requests', async () => {
    const server = await serve({ status: 500 }, { status: 500 }, { status: 503 }, { status: 500 });
    const error: unknown = await (
      await agentFor(server, { retry: { maxAttempts: 3, initialDelayMs: 10 } })
    )
      .turn(request())
      .catch((e: unknown) => e);
    expect(AgentError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'AGENT_FAILED', kind: 'system', httpStatus: 503, attempts: 3 });
    expect((error as Error).message).toContain('last HTTP status 503');
    expect(server.requests).toHaveLength(3);
  });

  it('401 is retried at most authAttempts times; 400 not at all', async () => {
    const server = await serve(...Array.from({ length: 5 }, () => ({ status: 401 })));
    const auth: unknown = await (
      await agentFor(server, { retry: { initialDelayMs: 10 } })
    )
      .turn(request())
      .catch((e: unknown) => e);
    expect(auth).toMatchObject({ code: 'AGENT_FAILED', httpStatus: 401, attempts: 3 });
    expect(server.requests).toHaveLength(3);
    const bad = await serve(
      { status: 400, body: { error: { message: 'context length exceeded' } } },
      textReply('x'),
    );
    const refused: unknown = await (await agentFor(bad)).turn(request()).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'AGENT_FAILED', httpStatus: 400, attempts: 1 });
    expect((refused as Error).message).toContain('context length exceeded');
    expect(bad.requests).toHaveLength(1);
  });

  it('a dropped connection (socket destroyed, before the headers or mid-body) is retried', async () => {
    const server = await serve({ drop: 'before_headers' }, { drop: 'mid_body' }, textReply('ok'));
    const notices: RetryNotice[] = [];
    const response = await (await agentFor(server)).turn(request({ onRetry: (n) => notices.push(n) }));
    expect(response.message.content).toBe('ok');
    expect(notices.map((n) => [n.kind, n.httpStatus])).toEqual([
      ['connection', null],
      ['connection', null],
    ]);
    const streamed = await serve({ drop: 'mid_body' }, textReply('ok'));
    const fromStream = await (await agentFor(streamed, { stream: true })).turn(request());
    expect(fromStream.message.content).toBe('ok');
    expect(streamed.requests).toHaveLength(2);
  });

  it('an endpoint where nothing listens is tried unreachableAttempts times, then AGENT_FAILED without a status', async () => {
    const server = await serve();
    const url = server.url;
    await server.close();
    servers.splice(servers.indexOf(server), 1);
    const notices: RetryNotice[] = [];
    const agent = await createOpenAIAgent({
      model: 'm',
      baseURL: url,
      apiKeyEnv: KEY_ENV,
      retry: { initialDelayMs: 10, unreachableAttempts: 2 },
    });
    const error: unknown = await agent
      .turn(request({ onRetry: (n) => notices.push(n) }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'AGENT_FAILED', httpStatus: null, attempts: 2 });
    expect(notices).toEqual([expect.objectContaining({ kind: 'unreachable', httpStatus: null })]);
    expect(notices[0]!.message).toContain('ECONNREFUSED');
  });

  it('a response slower than timeoutMs is a failed attempt: the request is dropped and retried', async () => {
    const server = await serve(textReply('late', { delayMs: 3000 }), textReply('on time'));
    const notices: RetryNotice[] = [];
    const started = performance.now();
    const response = await (
      await agentFor(server, { timeoutMs: 300 })
    ).turn(request({ onRetry: (n) => notices.push(n) }));
    expect(response.message.content).toBe('on time');
    expect(performance.now() - started).toBeLessThan(2000);
    expect(notices).toEqual([expect.objectContaining({ kind: 'timeout', httpStatus: null })]);
    expect(notices[0]!.attemptMs).toBeGreaterThanOrEqual(290);
    expect(server.requests[0]!.closedByClient).toBe(true);
    // A stream whose body stalls past the limit is cut the same way.
    const stalled = await serve(textReply('late', { delayMs: 3000 }), textReply('on time'));
    const fromStream = await (await agentFor(stalled, { timeoutMs: 300, stream: true })).turn(request());
    expect(fromStream.message.content).toBe('on time');
  });

  it('a 200 whose body is not a chat completion fails at once (AGENT_FAILED, status 200)', async () => {
    const server = await serve({ raw: '{"object": "nonsense"}' }, textReply('x'));
    const error: unknown = await (await agentFor(server)).turn(request()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'AGENT_FAILED', httpStatus: 200, attempts: 1 });
    expect((error as Error).message).toContain('no choices');
  });
});

describe('createOpenAIAgent: cancellation', () => {
  it('an abort mid-request stops it at once: ABORTED, and the server sees the connection close', async () => {
    const server = await serve(textReply('never', { delayMs: 10_000 }));
    const controller = new AbortController();
    const agent = await agentFor(server);
    setTimeout(() => {
      controller.abort();
    }, 200);
    const started = performance.now();
    const error: unknown = await agent
      .turn(request({ abortSignal: controller.signal }))
      .catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(1500);
    expect(error).toMatchObject({ name: 'AgentError', code: 'ABORTED', kind: 'system' });
    await expect.poll(() => server.requests[0]?.closedByClient, { timeout: 2000 }).toBe(true);
  });

  it('an abort mid-backoff stops the wait: no second request', async () => {
    const server = await serve({ status: 500 }, textReply('never'));
    const controller = new AbortController();
    const agent = await agentFor(server, { retry: { initialDelayMs: 10_000 } });
    const started = performance.now();
    const error: unknown = await agent
      .turn(
        request({
          abortSignal: controller.signal,
          onRetry: () => {
            setTimeout(() => {
              controller.abort();
            }, 100);
          },
        }),
      )
      .catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(error).toMatchObject({ code: 'ABORTED', attempts: 1 });
    expect(server.requests).toHaveLength(1);
  });
});

describe('createOpenAIAgent: the API key', () => {
  it('never appears in an error, even when the server echoes it', async () => {
    const server = await serve(
      { status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}` } } },
      { status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}` } } },
      { status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}` } } },
    );
    const notices: RetryNotice[] = [];
    const error: unknown = await (
      await agentFor(server, { retry: { initialDelayMs: 10 } })
    )
      .turn(request({ onRetry: (n) => notices.push(n) }))
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain('[redacted]');
    expect((error as Error).message).not.toContain(KEY);
    expect(JSON.stringify(notices)).not.toContain(KEY);
    expect(notices).toHaveLength(2);
  });

  it('comes from a file only its owner can read; a file readable by others is refused, naming apiKeyFile', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-agents-key-'));
    dirs.push(dir);
    const file = path.join(dir, 'key');
    fs.writeFileSync(file, 'sk-from-file\n', { mode: 0o600 });
    const server = await serve(textReply('ok'));
    await (await createOpenAIAgent({ model: 'm', baseURL: server.url, apiKeyFile: file })).turn(request());
    expect(server.requests[0]!.headers['authorization']).toBe('Bearer sk-from-file');
    fs.chmodSync(file, 0o644);
    const error: unknown = await createOpenAIAgent({
      model: 'm',
      baseURL: server.url,
      apiKeyFile: file,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadArgumentError);
    expect(error).toMatchObject({ field: 'apiKeyFile' });
    expect((error as Error).message).toContain('chmod 600');
    expect((error as Error).message).not.toContain('sk-from-file');
  });

  it('a missing environment variable is a BadArgumentError naming apiKeyEnv', async () => {
    const error: unknown = await createOpenAIAgent({
      model: 'm',
      baseURL: 'http://127.0.0.1:9/v1',
      apiKeyEnv: 'KAROTTE_TEST_NO_SUCH_VARIABLE',
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadArgumentError);
    expect(error).toMatchObject({ field: 'apiKeyEnv' });
    expect((error as Error).message).toContain('KAROTTE_TEST_NO_SUCH_VARIABLE');
  });
});

describe('createOpenAIAgent: options', () => {
  it.each([
    [{ modell: 'x' }, 'modell'],
    [{ baseURL: 'ftp://example.invalid/v1' }, 'baseURL'],
    [{ extraBody: { model: 'other' } }, 'extraBody.model'],
    [{ headers: { Authorization: 'Bearer x' } }, 'headers.Authorization'],
    [{ apiKeyFile: '/nonexistent' }, 'apiKeyFile'],
    [{ sampling: { temperature: 9 } }, 'sampling.temperature'],
    [{ retry: { maxAttempts: 0 } }, 'retry.maxAttempts'],
  ])('refuses %j, naming %s', async (bad, field) => {
    const error: unknown = await createOpenAIAgent({
      model: 'm',
      baseURL: 'http://127.0.0.1:9/v1',
      apiKeyEnv: KEY_ENV,
      ...(bad as object),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadArgumentError);
    expect(error).toMatchObject({ field });
  });
});
