// The episode's model loop (empty turns, malformed JSON, unknown tools, content filters, retry
// waits, endpoint faults) driven by the real OpenAI-compatible agent against the real scripted
// model server on loopback. The student's world is a fake here: these rules are the loop's
// own, and a sandbox adds nothing to them (no command they need does anything but echo). The
// same loop over the real sandbox, as root, is in episode-model.integration.test.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createOpenAIAgent, replaySchema, type OpenAIAgentOptions } from '@karotte/agents';
import {
  createScriptedModelServer,
  textReply,
  toolCallReply,
  type ScriptedModelServer,
  type ScriptedReply,
} from '@karotte/agents/testing';
import { createFunctionJudge, type SubmissionCollector } from '@karotte/grader';
import { afterEach, describe, expect, it } from 'vitest';
import type { MessageAgent } from './agent.js';
import { defineTask } from './define-task.js';
import {
  EMPTY_TURN_NUDGE,
  MALFORMED_ARGUMENTS_PLACEHOLDER,
  runEpisode,
  type EpisodeOptions,
  type EpisodeProgress,
} from './episode.js';
import type { ToolProfile } from './tools/profile.js';
import type { ShellOutcome, StudentWorld } from './world.js';

const KEY_ENV = 'KAROTTE_TEST_CORE_KEY';
process.env[KEY_ENV] = 'sk-core-loop-test';

const made: string[] = [];
const servers: ScriptedModelServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function outDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-core-loop-'));
  made.push(dir);
  return dir;
}

/** A world that answers every command with its own text (the loop's rules need no more). */
function fakeWorld() {
  const commands: string[] = [];
  let destroyed = 0;
  const collector: SubmissionCollector = {
    reap: () =>
      Promise.resolve({
        confirmed: true,
        mechanism: 'fake',
        killed: 0,
        survivors: [],
        record: {},
        misbehavior: [],
      }),
    reclaim: () => Promise.resolve({ ok: true, record: {}, misbehavior: [] }),
    takeCustody: () =>
      Promise.resolve({
        dir: '/nonexistent-karotte-fake-custody',
        entries: [],
        missing: [],
        totalBytes: 0,
        misbehavior: [],
        manifest: {},
        dispose: () => Promise.resolve(),
      }),
  };
  const world: StudentWorld = {
    uid: 4242,
    workDir: '/nonexistent-karotte-fake-work',
    handle: { uid: 4242, workDir: '/nonexistent-karotte-fake-work' },
    network: { checked: true, isolated: true, detail: 'fake world: nothing to check' },
    collector,
    exec(command): Promise<ShellOutcome> {
      commands.push(command);
      const stdout = `ran: ${command}\n`;
      return Promise.resolve({
        stdout,
        stderr: '',
        exitCode: 0,
        timedOut: false,
        truncated: false,
        stdoutBytes: stdout.length,
        stderrBytes: 0,
        durationMs: 1,
      });
    },
    limitHits: () => Promise.resolve({ hits: [], misbehavior: [] }),
    destroy: () => {
      destroyed += 1;
      return Promise.resolve();
    },
  };
  return {
    world,
    commands,
    get destroyed() {
      return destroyed;
    },
  };
}

/** A task whose judge passes when the step's final answer is `done`. */
function sayDone(limits: { wallTimeMs?: number } = {}) {
  return defineTask({
    id: 'say-done',
    instructions: 'Run a command, then say done.',
    submission: ['answer.txt'],
    limits,
    judge: createFunctionJudge(({ finalAnswer }) => (finalAnswer?.trim() === 'done' ? 1 : 0)),
  });
}

async function serve(...replies: ScriptedReply[]): Promise<ScriptedModelServer> {
  const server = await createScriptedModelServer({ replies });
  servers.push(server);
  return server;
}

function agentFor(server: ScriptedModelServer, options: Partial<OpenAIAgentOptions> = {}) {
  return createOpenAIAgent({
    model: 'scripted',
    baseURL: server.url,
    apiKeyEnv: KEY_ENV,
    retry: { initialDelayMs: 20 },
    ...options,
  });
}

type Event = Record<string, unknown> & { type: string };
function events(dir: string): Event[] {
  return fs
    .readFileSync(path.join(dir, 'transcript.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Event);
}

async function run(
  server: ScriptedModelServer,
  options: Partial<EpisodeOptions> & {
    agent?: Partial<OpenAIAgentOptions>;
    task?: ReturnType<typeof sayDone>;
  } = {},
) {
  const fake = fakeWorld();
  const out = outDir();
  const progress: EpisodeProgress[] = [];
  const { agent: agentOptions, task, ...rest } = options;
  const result = await runEpisode(task ?? sayDone(), await agentFor(server, agentOptions), {
    outDir: out,
    createWorld: () => Promise.resolve(fake.world),
    onProgress: (event) => progress.push(event),
    ...rest,
  });
  return { result, fake, out, progress, transcript: events(out) };
}

/** The messages the n-th request sent. */
function sent(server: ScriptedModelServer, n: number): Record<string, unknown>[] {
  return server.requests[n]!.body!['messages'] as Record<string, unknown>[];
}

describe('the model loop: empty turns', () => {
  it('a length cut and a reasoning-only turn each get a nudge; the model goes on and passes', async () => {
    const server = await serve(
      { content: null, finishReason: 'length' },
      { content: null, reasoning: 'let me think about it', finishReason: 'stop' },
      toolCallReply('bash', { command: 'echo hi' }),
      textReply('done'),
    );
    const { result, fake, transcript } = await run(server);
    expect(result).toMatchObject({ status: 'passed', score: 1, turns: 4, error: null, misbehavior: [] });
    expect(fake.commands).toEqual(['echo hi']);
    // The second request ends with the empty answer and the nudge.
    expect(sent(server, 1).slice(-2)).toEqual([
      { role: 'assistant', content: '' },
      { role: 'user', content: EMPTY_TURN_NUDGE },
    ]);
    expect(sent(server, 3).filter((m) => m['content'] === EMPTY_TURN_NUDGE)).toHaveLength(2);
    const calls = transcript.filter((e) => e.type === 'model_call');
    expect(calls.map((e) => [e['finishReason'], e['empty']])).toEqual([
      ['length', true],
      ['stop', true],
      ['tool_calls', false],
      ['stop', false],
    ]);
    expect(transcript.filter((e) => e.type === 'message' && e['nudge'] === true)).toHaveLength(2);
    expect(transcript.find((e) => e.type === 'step_ended')).toMatchObject({ stopReason: 'no_tool_calls' });
    // The reasoning is beside the message: every assistant message of the transcript is a replay message.
    const reasoned = transcript.find((e) => e.type === 'message' && e['reasoning'] !== undefined);
    expect(reasoned).toMatchObject({
      reasoning: 'let me think about it',
      message: { role: 'assistant', content: null },
    });
    const assistants = transcript
      .filter((e) => e.type === 'message' && (e['message'] as { role: string }).role === 'assistant')
      .map((e) => e['message']);
    expect(replaySchema.safeParse(assistants).success).toBe(true);
  });

  it('more than 3 empty turns in a row end the step as failed (EMPTY_TURN_LIMIT), never error', async () => {
    const empty: ScriptedReply = { content: null, finishReason: 'length' };
    const server = await serve(empty, empty, empty, empty, textReply('done'));
    const { result, transcript, fake } = await run(server);
    expect(result).toMatchObject({ status: 'failed', score: 0, error: null, turns: 4 });
    expect(result.misbehavior.map((m) => m.code)).toEqual(['EMPTY_TURN_LIMIT']);
    expect(result.misbehavior[0]!.message).toContain('4 turns in a row');
    expect(server.requests).toHaveLength(4);
    expect(transcript.filter((e) => e.type === 'message' && e['nudge'] === true)).toHaveLength(3);
    expect(transcript.find((e) => e.type === 'step_ended')).toMatchObject({
      status: 'failed',
      stopReason: 'empty_turn_limit',
    });
    expect(fake.destroyed).toBe(1);
  });

  it('a turn with text ends the step even when cut by length; a non-empty turn resets the count', async () => {
    const empty: ScriptedReply = { content: null, finishReason: 'length' };
    const server = await serve(
      empty,
      empty,
      empty,
      toolCallReply('bash', { command: 'true' }),
      empty,
      empty,
      textReply('done', { finishReason: 'length' }),
    );
    const { result } = await run(server);
    expect(result).toMatchObject({ status: 'passed', turns: 7, misbehavior: [] });
  });
});

describe('the model loop: tool calls', () => {
  it('malformed argument JSON gets an error result and is replaced in the conversation, so later calls are clean', async () => {
    const server = await serve(
      toolCallReply('bash', '{"command": "echo unterminated'),
      toolCallReply('bash', { command: 'echo fine' }),
      textReply('done'),
    );
    const { result, fake, transcript } = await run(server);
    expect(result.status).toBe('passed');
    expect(fake.commands).toEqual(['echo fine']);
    const history = sent(server, 1);
    const assistant = history.find((m) => m['role'] === 'assistant') as {
      tool_calls: { function: { arguments: string } }[];
    };
    expect(assistant.tool_calls[0]!.function.arguments).toBe(MALFORMED_ARGUMENTS_PLACEHOLDER);
    expect(JSON.parse(MALFORMED_ARGUMENTS_PLACEHOLDER)).toEqual({
      _error: 'malformed JSON in original arguments',
    });
    const toolMessage = history.find((m) => m['role'] === 'tool')!;
    expect(toolMessage['content']).toBe(
      '[note] malformed arguments: expected JSON {"command": string, "timeoutMs"?: number}\n[exit code: none]',
    );
    // Nothing later carries the malformed text; the transcript keeps what the model sent.
    for (const request of server.requests.slice(1)) expect(request.text).not.toContain('unterminated');
    const call = transcript.find((e) => e.type === 'tool_call') as unknown as {
      toolCall: { function: { arguments: string } };
    };
    expect(call.toolCall.function.arguments).toBe('{"command": "echo unterminated');
    const result0 = transcript.find((e) => e.type === 'tool_result') as unknown as {
      result: { ok: boolean; note: string };
    };
    expect(result0.result).toMatchObject({ ok: false, exitCode: null });
  });

  it('an unknown tool gets an error result naming the tools, and runs nothing', async () => {
    const server = await serve(toolCallReply('python', { code: 'print(1)' }), textReply('done'));
    const { result, fake, transcript } = await run(server);
    expect(result.status).toBe('passed');
    expect(fake.commands).toEqual([]);
    expect(sent(server, 1).at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_0_0',
      content: '[note] unknown tool python; the only tool is bash\n[exit code: none]',
    });
    expect(transcript.find((e) => e.type === 'tool_result')).toMatchObject({
      result: { ok: false, note: 'unknown tool python; the only tool is bash' },
    });
  });

  it('content_filter ends the step: its tool calls are answered as not run, and the step is graded', async () => {
    const server = await serve(
      toolCallReply('bash', { command: 'echo filtered' }, { finishReason: 'content_filter' }),
      textReply('done'),
    );
    const { result, fake, transcript } = await run(server);
    expect(server.requests).toHaveLength(1);
    expect(fake.commands).toEqual([]);
    expect(result).toMatchObject({ status: 'failed', error: null, turns: 1 });
    expect(transcript.find((e) => e.type === 'tool_result')).toMatchObject({
      result: { ok: false, note: "the provider's content filter cut the answer; the step ends" },
    });
    expect(transcript.find((e) => e.type === 'step_ended')).toMatchObject({ stopReason: 'content_filter' });
  });

  it('a profile with file tools: its tools are offered, an image result reaches the model as a part and the transcript as its digest', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');
    const calls: unknown[] = [];
    const profile: ToolProfile = {
      name: 'test-profile',
      tools: [
        { name: 'view_image', description: 'view an image', parameters: { type: 'object' } },
        { name: 'shell', description: 'run commands', parameters: { type: 'object' } },
      ],
      call: (request) => {
        calls.push(request);
        return Promise.resolve({
          ok: true,
          content: [
            { type: 'text', text: 'the image:' },
            { type: 'image', mediaType: 'image/png', dataBase64: png },
          ],
          durationMs: 2,
        });
      },
    };
    const server = await serve(
      toolCallReply('view_image', { path: '/work/chart.png' }),
      toolCallReply('bash', { command: 'ls' }),
      textReply('done'),
    );
    const { result, transcript } = await run(server, { tools: profile });
    expect(result.status).toBe('passed');
    expect(calls).toEqual([{ id: 'call_0_0', name: 'view_image', arguments: { path: '/work/chart.png' } }]);
    expect(
      (server.requests[0]!.body!['tools'] as { function: { name: string } }[]).map((t) => t.function.name),
    ).toEqual(['view_image', 'shell']);
    expect(sent(server, 0)[0]!['content']).toContain('Use the tools (view_image, shell)');
    const second = sent(server, 1);
    expect(second.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'The images returned by the tool calls above:' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
      ],
    });
    const imageResult = transcript.find((e) => e.type === 'tool_result') as unknown as {
      content: Record<string, unknown>[];
    };
    expect(imageResult.content).toEqual([
      { type: 'text', text: 'the image:' },
      { type: 'image', mediaType: 'image/png', bytes: 16, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
    ]);
    expect(JSON.stringify(transcript)).not.toContain(png);
    expect(sent(server, 2).at(-1)).toMatchObject({
      role: 'tool',
      content: '[note] unknown tool bash; the tools are view_image, shell\n[exit code: none]',
    });
  });
});

describe('the model loop: model calls in the transcript', () => {
  it('records every call with usage, finish reason, timing and token ids; every retry with its status and wait', async () => {
    const server = await serve(
      { status: 429, headers: { 'retry-after-ms': '50' } },
      toolCallReply(
        'bash',
        { command: 'echo 1' },
        { tokenIds: [7, 8], promptTokenIds: [1, 2, 3], logprobs: [-1, -2] },
      ),
      textReply('done', { usage: { promptTokens: 200, completionTokens: 2, cachedTokens: 150 } }),
    );
    const { result, transcript, progress } = await run(server, {
      agent: { extraBody: { return_token_ids: true, logprobs: true } },
    });
    expect(result.status).toBe('passed');
    const types = transcript.map((e) => e.type);
    expect(types.indexOf('model_retry')).toBeLessThan(types.indexOf('model_call'));
    expect(transcript.find((e) => e.type === 'model_retry')).toMatchObject({
      step: 0,
      turn: 1,
      attempt: 1,
      kind: 'rate_limit',
      httpStatus: 429,
      waitMs: 50,
    });
    const calls = transcript.filter((e) => e.type === 'model_call');
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({
      step: 0,
      turn: 1,
      agent: 'openai',
      finishReason: 'tool_calls',
      usage: { inputTokens: 100, outputTokens: 10 },
      attempts: 2,
      model: 'scripted-model',
      tokens: { promptIds: [1, 2, 3], completionIds: [7, 8], logprobs: [-1, -2] },
      toolCalls: 1,
      empty: false,
    });
    const timing = calls[0]!['timing'] as { modelMs: number; retryWaitMs: number };
    expect(timing.retryWaitMs).toBeGreaterThanOrEqual(50);
    expect(calls[1]).toMatchObject({ usage: { inputTokens: 200, outputTokens: 2, cachedInputTokens: 150 } });
    expect(calls[1]).not.toHaveProperty('tokens');
    expect(progress.filter((p) => p.type === 'model_call')).toHaveLength(2);
    expect(progress.find((p) => p.type === 'model_retry')).toMatchObject({ httpStatus: 429, waitMs: 50 });
    expect(transcript.map((e) => e['seq'])).toEqual(transcript.map((_, i) => i));
  });

  it('retry waits are not charged to the wall time: 2.4 s of 429 waits within a 1.5 s limit still pass', async () => {
    const server = await serve(
      { status: 429, headers: { 'retry-after-ms': '1200' } },
      { status: 429, headers: { 'retry-after-ms': '1200' } },
      textReply('done'),
    );
    const started = performance.now();
    const { result } = await run(server, { task: sayDone({ wallTimeMs: 1500 }) });
    expect(performance.now() - started).toBeGreaterThan(2400);
    expect(result).toMatchObject({ status: 'passed', score: 1, wallTimeExceeded: false, misbehavior: [] });
    // The model's own time is charged: a slow answer past the limit is the student's.
    const slow = await serve(textReply('done', { delayMs: 2000 }));
    const { result: late } = await run(slow, { task: sayDone({ wallTimeMs: 1000 }) });
    expect(late).toMatchObject({ status: 'failed', wallTimeExceeded: true });
    expect(late.misbehavior.map((m) => m.code)).toEqual(['WALL_TIME_LIMIT']);
  });

  it('an endpoint that stays down ends the episode as error (AGENT_FAILED, last HTTP status), never as a failure', async () => {
    const server = await serve(
      toolCallReply('bash', { command: 'echo before' }),
      { status: 503 },
      { status: 503 },
      { status: 503 },
    );
    const { result, transcript, fake, out } = await run(server, {
      agent: { retry: { maxAttempts: 3, initialDelayMs: 10 } },
    });
    expect(result).toMatchObject({
      status: 'error',
      score: 0,
      misbehavior: [],
      error: { code: 'AGENT_FAILED', httpStatus: 503 },
    });
    expect(result.error?.message).toContain('last HTTP status 503');
    expect(result.steps).toEqual([]);
    expect(transcript.filter((e) => e.type === 'error')).toEqual([
      expect.objectContaining({ phase: 'agent', code: 'AGENT_FAILED', httpStatus: 503 }),
    ]);
    expect(transcript.filter((e) => e.type === 'model_retry')).toHaveLength(2);
    expect(fake.destroyed).toBe(1);
    const saved = JSON.parse(fs.readFileSync(path.join(out, 'result.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(saved['error']).toMatchObject({ code: 'AGENT_FAILED', httpStatus: 503 });
  });
});

describe('runEpisode with an agent of the first interface', () => {
  it('still drives a MessageAgent (next(conversation, tools) → message)', async () => {
    const seen: number[] = [];
    const agent: MessageAgent = {
      name: 'legacy',
      next(conversation) {
        seen.push(conversation.length);
        return Promise.resolve(
          seen.length === 1
            ? {
                role: 'assistant',
                content: null,
                tool_calls: [
                  { id: 'c', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
                ],
              }
            : { role: 'assistant', content: 'done' },
        );
      },
    };
    const fake = fakeWorld();
    const out = outDir();
    const result = await runEpisode(sayDone(), agent, {
      outDir: out,
      createWorld: () => Promise.resolve(fake.world),
    });
    expect(result).toMatchObject({ status: 'passed', agent: 'legacy', turns: 2 });
    expect(seen).toEqual([2, 4]);
    expect(fake.commands).toEqual(['ls']);
    expect(events(out).filter((e) => e.type === 'model_call')).toHaveLength(2);
  });
});
