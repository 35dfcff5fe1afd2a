// Episodes driven by a model: the real OpenAI-compatible agent (the official SDK) against the
// scripted model server on loopback, acting in the real sandbox (root). The model is the only
// thing scripted.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createOpenAIAgent, type OpenAIAgentOptions } from '@karotte/agents';
import {
  createScriptedModelServer,
  textReply,
  toolCallReply,
  type ScriptedModelServer,
  type ScriptedReply,
} from '@karotte/agents/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { pidsOfUid } from '../../../test/support/index.js';
import { runEpisode } from './episode.js';
import { createSandboxWorld } from './sandbox-world.js';
import { loadTask } from './task.js';

const examples = path.resolve(import.meta.dirname, '../../../apps/karotte/examples');
const KEY_ENV = 'KAROTTE_TEST_MODEL_KEY';
const KEY = 'sk-karotte-integration-5d1e8b2a77c4';
process.env[KEY_ENV] = KEY;

const made: string[] = [];
const servers: ScriptedModelServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function outDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-episode-model-'));
  made.push(dir);
  return dir;
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
    retry: { initialDelayMs: 50 },
    ...options,
  });
}

/** The control replay's bash commands (the scripted model answers with them). */
function controlCommands(name: string): string[] {
  const control = JSON.parse(fs.readFileSync(path.join(examples, name, 'control.json'), 'utf8')) as {
    tool_calls?: { function: { arguments: string } }[];
  }[];
  return control.flatMap((m) =>
    (m.tool_calls ?? []).map((c) => (JSON.parse(c.function.arguments) as { command: string }).command),
  );
}

type Event = Record<string, unknown> & { type: string };
function transcriptOf(dir: string): { text: string; events: Event[] } {
  const text = fs.readFileSync(path.join(dir, 'transcript.jsonl'), 'utf8');
  return {
    text,
    events: text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Event),
  };
}

describe('episodes driven by a model behind a chat-completions endpoint', () => {
  it.each([false, true])(
    'the quarterly-revenue control, through 429s, a 500, a dropped connection and an empty turn, passes (stream: %s)',
    async (stream) => {
      const commands = controlCommands('quarterly-revenue');
      const server = await serve(
        { status: 429, headers: { 'retry-after-ms': '100' } },
        toolCallReply('bash', { command: commands[0]! }, { tokenIds: [1, 2, 3] }),
        { status: 500 },
        { drop: 'mid_body' },
        { content: null, finishReason: 'length' },
        toolCallReply('bash', { command: commands[1]! }),
        textReply('The third-quarter total is in answer.txt.'),
      );
      const task = await loadTask(path.join(examples, 'quarterly-revenue'));
      const out = outDir();
      const result = await runEpisode(
        task,
        await agentFor(server, { stream, extraBody: { return_token_ids: true } }),
        {
          outDir: out,
          createWorld: createSandboxWorld,
        },
      );
      expect(result).toMatchObject({
        status: 'passed',
        score: 1,
        misbehavior: [],
        error: null,
        agent: 'openai',
      });
      expect(server.requests).toHaveLength(7);
      const { events } = transcriptOf(out);
      expect(events.filter((e) => e.type === 'model_retry').map((e) => e['kind'])).toEqual([
        'rate_limit',
        'server',
        'connection',
      ]);
      expect(events.filter((e) => e.type === 'model_call')).toHaveLength(4);
      expect(events.find((e) => e.type === 'model_call')).toMatchObject({
        tokens: { completionIds: [1, 2, 3] },
      });
      const results = events.filter((e) => e.type === 'tool_result') as unknown as {
        result: { exitCode: number; stdout: string };
      }[];
      expect(results.map((r) => r.result.exitCode)).toEqual([0, 0]);
      expect(results[0]!.result.stdout).toContain('order_id');
      expect(pidsOfUid(result.sandbox.uid!)).toEqual([]);
    },
    180_000,
  );

  it('a wrong answer fails with score 0 (the model is graded like any student)', async () => {
    const server = await serve(
      toolCallReply('bash', { command: 'echo 12345 > answer.txt' }),
      textReply('Done.'),
    );
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const result = await runEpisode(task, await agentFor(server), {
      outDir: outDir(),
      createWorld: createSandboxWorld,
    });
    expect(result).toMatchObject({ status: 'failed', score: 0, error: null });
  }, 120_000);

  it.each(['env', 'file'] as const)(
    'the API key (from %s) goes to the endpoint only: not in the student environment, /proc/*/cmdline, readable files or the transcript',
    async (source) => {
      const keyDir = outDir();
      const keyFile = path.join(keyDir, 'api-key');
      fs.writeFileSync(keyFile, `${KEY}\n`, { mode: 0o600 });
      const server = await serve(
        toolCallReply('bash', {
          command: [
            'env',
            'echo ---',
            "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '",
            'echo',
            'echo ---',
            `cat ${keyFile} 2>&1 | head -c 200`,
            `grep -rl -- '${KEY.slice(0, 12)}' /tmp /var/tmp /dev/shm /run /etc /home . 2>/dev/null | head -5`,
            'echo searched',
          ].join('; '),
        }),
        textReply('Done.'),
      );
      const task = await loadTask(path.join(examples, 'quarterly-revenue'));
      const out = outDir();
      const agent =
        source === 'env'
          ? await agentFor(server)
          : await createOpenAIAgent({ model: 'scripted', baseURL: server.url, apiKeyFile: keyFile });
      const result = await runEpisode(task, agent, { outDir: out, createWorld: createSandboxWorld });
      expect(result.status).toBe('failed');
      expect(server.requests.every((r) => r.headers['authorization'] === `Bearer ${KEY}`)).toBe(true);
      const { text, events } = transcriptOf(out);
      const observed = events.find((e) => e.type === 'tool_result') as unknown as {
        result: { stdout: string; exitCode: number };
      };
      // The command ran and saw the environment and processes: the key is in none of it.
      expect(observed.result.stdout).toContain('PATH=');
      expect(observed.result.stdout).toContain('searched');
      expect(observed.result.stdout).not.toContain(KEY);
      expect(observed.result.stdout).not.toContain(KEY_ENV);
      expect(text).not.toContain(KEY);
      expect(fs.readFileSync(path.join(out, 'result.json'), 'utf8')).not.toContain(KEY);
    },
    120_000,
  );

  it('an endpoint that stays down ends the episode as error (AGENT_FAILED with its status), leaving nothing behind', async () => {
    const server = await serve(
      toolCallReply('bash', { command: 'sleep 300 & echo started' }),
      ...Array.from({ length: 3 }, () => ({ status: 502 })),
    );
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const out = outDir();
    const result = await runEpisode(
      task,
      await agentFor(server, { retry: { maxAttempts: 3, initialDelayMs: 20 } }),
      {
        outDir: out,
        createWorld: createSandboxWorld,
      },
    );
    expect(result).toMatchObject({
      status: 'error',
      score: 0,
      misbehavior: [],
      error: { code: 'AGENT_FAILED', httpStatus: 502 },
    });
    expect(pidsOfUid(result.sandbox.uid!)).toEqual([]);
  }, 120_000);

  it('cancelling the episode mid-request aborts the model call at once and tears down', async () => {
    const server = await serve(
      toolCallReply('bash', { command: 'echo working' }),
      textReply('too late', { delayMs: 60_000 }),
    );
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const controller = new AbortController();
    const pending = runEpisode(task, await agentFor(server), {
      outDir: outDir(),
      createWorld: createSandboxWorld,
      abortSignal: controller.signal,
    });
    await expect.poll(() => server.requests.length, { timeout: 60_000, interval: 50 }).toBe(2);
    const aborted = performance.now();
    controller.abort();
    const result = await pending;
    expect(performance.now() - aborted).toBeLessThan(15_000);
    expect(result).toMatchObject({ status: 'error', error: { code: 'ABORTED' } });
    await expect.poll(() => server.requests[1]!.closedByClient, { timeout: 5000 }).toBe(true);
    expect(pidsOfUid(result.sandbox.uid!)).toEqual([]);
  }, 120_000);
});
