import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DispatchError,
  MAX_PAYLOAD_BYTES,
  Metrics,
  parseJobResult,
  parsePayload,
  parseRedisUrl,
  taskDigest,
  TaskStore,
} from './index.js';

const control = [
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'c0', type: 'function', function: { name: 'bash', arguments: '{"command":"echo 1 > a"}' } },
    ],
  },
  { role: 'assistant', content: 'done' },
];

function payload(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schema: 1,
    runId: 'r1',
    episodeId: 'r1-sum-0',
    task: { id: 'sum', digest: `sha256:${'a'.repeat(64)}` },
    agent: { kind: 'replay', messages: control },
    submittedAt: 1,
    ...over,
  };
}

describe('parsePayload', () => {
  it('accepts the version-1 payload', () => {
    expect(parsePayload(payload())).toMatchObject({ runId: 'r1', task: { id: 'sum' } });
  });

  it.each([
    ['an unknown field (an answer key smuggled in)', { hidden: { 'expected.txt': '12' } }, 'payload'],
    ['an unknown task field (a grader)', { task: { id: 'sum', grader: 'x' } }, 'task'],
    ['an api key in the agent', { agent: { kind: 'replay', messages: control, apiKey: 'sk' } }, 'agent'],
    ['another schema version', { schema: 2 }, 'schema'],
    ['a bad digest', { task: { id: 'sum', digest: 'md5:1' } }, 'task.digest'],
    [
      "a model agent's URL (workers own endpoints)",
      { agent: { kind: 'openai', endpoint: 'e1', model: 'x', baseURL: 'http://10.0.0.9/v1' } },
      'agent',
    ],
    [
      "a model agent's key",
      { agent: { kind: 'openai', endpoint: 'e1', model: 'x', apiKey: 'sk-1' } },
      'agent',
    ],
    ['an agent of no known kind', { agent: { kind: 'claude', model: 'x' } }, 'agent.kind'],
    ['an episode of another run', { episodeId: 'r2-sum-0' }, 'episodeId'],
    ['a job id with a colon', { episodeId: 'r1:sum-0' }, 'episodeId'],
  ])('refuses %s, naming the field', (_what, over, field) => {
    let error: unknown;
    try {
      parsePayload(payload(over));
    } catch (e) {
      error = e;
    }
    expect(DispatchError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'INVALID_PAYLOAD', kind: 'bad_argument' });
    expect((error as DispatchError).field?.startsWith(field)).toBe(true);
  });

  it('accepts a model agent that names its endpoint', () => {
    const agent = {
      kind: 'openai',
      endpoint: 'vllm-a',
      model: 'qwen',
      sampling: { temperature: 1 },
      policyVersion: 'v3',
    };
    expect(parsePayload(payload({ agent })).agent).toEqual(agent);
  });

  it(`refuses a payload past ${MAX_PAYLOAD_BYTES} bytes`, () => {
    const long = [{ role: 'assistant', content: 'x'.repeat(MAX_PAYLOAD_BYTES) }];
    expect(() => parsePayload(payload({ agent: { kind: 'replay', messages: long } }))).toThrow(
      /16384 allowed/,
    );
  });
});

describe('parseJobResult', () => {
  it('reads a stored return value from its JSON text and refuses anything else', () => {
    const value = {
      schema: 1,
      runId: 'r1',
      episodeId: 'r1-sum-0',
      attemptToken: 't:1',
      worker: 'w',
      attemptsStarted: 1,
      outDir: '/x',
      transcript: null,
      result: {
        taskId: 'sum',
        status: 'passed',
        score: 1,
        misbehavior: [],
        sandbox: { uid: 5 },
        durationMs: 3,
      },
    };
    expect(parseJobResult(JSON.stringify(value))?.result.status).toBe('passed');
    expect(parseJobResult(value)?.attemptToken).toBe('t:1');
    expect(parseJobResult('{"schema":1')).toBeNull();
    expect(parseJobResult({ ...value, extra: 1 })).toBeNull();
  });
});

describe('parseRedisUrl', () => {
  it('parses host, port and db, with the password given apart', () => {
    expect(parseRedisUrl('redis://10.0.0.1:6380/2', 'pw')).toEqual({
      host: '10.0.0.1',
      port: 6380,
      db: 2,
      password: 'pw',
    });
    expect(parseRedisUrl('redis://localhost')).toEqual({ host: 'localhost', port: 6379, db: 0 });
  });

  it.each([
    'redis://:secret@h:1',
    'redis://u:secret@h:1',
    'http://h:1',
    'redis://h:1/x',
    'nope',
    'redis://h:1/?a=1',
  ])('refuses %s', (url) => {
    expect(() => parseRedisUrl(url)).toThrow(DispatchError);
  });

  it('says why a password in the URL is refused', () => {
    expect(() => parseRedisUrl('redis://:secret@h:1')).toThrow(/KAROTTE_REDIS_PASSWORD/);
  });
});

describe('taskDigest and TaskStore', () => {
  it('changes with any file of the task and finds tasks by id', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-dispatch-unit-'));
    try {
      const dir = path.join(root, 'sum');
      fs.mkdirSync(path.join(dir, 'hidden'), { recursive: true });
      fs.writeFileSync(
        path.join(dir, 'task.json'),
        JSON.stringify({ id: 'sum', instructions: 'x', submission: ['a'], grader: { script: 'g.mjs' } }),
      );
      fs.writeFileSync(path.join(dir, 'g.mjs'), '');
      fs.writeFileSync(path.join(dir, 'hidden', 'k'), '12');
      const before = await taskDigest(dir);
      expect(before).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(await taskDigest(dir)).toBe(before);
      fs.writeFileSync(path.join(dir, 'hidden', 'k'), '13');
      expect(await taskDigest(dir)).not.toBe(before);
      const store = await TaskStore.open(root);
      expect(store.ids()).toEqual(['sum']);
      expect((await store.get('sum'))?.digest).toBe(await taskDigest(dir));
      expect(await store.get('other')).toBeNull();
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('Metrics', () => {
  it('renders counters, gauges and histograms as Prometheus text', () => {
    const m = new Metrics();
    m.inc('karotte_episodes_total', 'Episodes', { status: 'passed' });
    m.inc('karotte_episodes_total', 'Episodes', { status: 'passed' });
    m.set('karotte_episodes_active', 'Active', 3);
    m.observe('karotte_episode_seconds', 'Seconds', 0.3, { phase: 'attempt' });
    const text = m.render();
    expect(text).toContain('# TYPE karotte_episodes_total counter');
    expect(text).toContain('karotte_episodes_total{status="passed"} 2');
    expect(text).toContain('karotte_episodes_active 3');
    expect(text).toContain('karotte_episode_seconds_bucket{le="0.25",phase="attempt"} 0');
    expect(text).toContain('karotte_episode_seconds_bucket{le="0.5",phase="attempt"} 1');
    expect(text).toContain('karotte_episode_seconds_count{phase="attempt"} 1');
  });
});
