// Episodes through the library API, with real sandboxes and graders (root).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pidsOfUid } from '../../../test/support/index.js';
import { createReplayAgent } from './agent.js';
import { createEpisode, runEpisode, type WorldFactory } from './episode.js';
import type { Agent } from './agent.js';
import type { AssistantMessage } from './messages.js';
import type { StudentWorld } from './world.js';
import { createSandboxWorld } from './sandbox-world.js';
import { loadTask } from './task.js';

const examples = path.resolve(import.meta.dirname, '../../../apps/karotte/examples');
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function outDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-episode-'));
  made.push(dir);
  return dir;
}

/** A submitted file's trimmed text, or '' when it is missing (a judge's view of it). */
function read(dir: string | null, name: string): string {
  try {
    return fs.readFileSync(path.join(dir ?? '/nonexistent', name), 'utf8').trim();
  } catch {
    return '';
  }
}

function bash(command: string, id = 'call_0'): AssistantMessage {
  return {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } },
    ],
  };
}

const control = JSON.parse(
  fs.readFileSync(path.join(examples, 'quarterly-revenue', 'control.json'), 'utf8'),
) as AssistantMessage[];

describe('episodes through the library API', () => {
  it('8 episodes at once all get correct verdicts, on distinct uids, leaving nothing behind', async () => {
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        runEpisode(task, createReplayAgent(i % 2 === 0 ? control : [bash(`echo ${i} > answer.txt`)]), {
          outDir: outDir(),
          createWorld: createSandboxWorld,
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([
      'passed',
      'failed',
      'passed',
      'failed',
      'passed',
      'failed',
      'passed',
      'failed',
    ]);
    expect(results.map((r) => r.score)).toEqual([1, 0, 1, 0, 1, 0, 1, 0]);
    const uids = results.map((r) => r.sandbox.uid);
    expect(new Set(uids).size).toBe(8);
    for (const uid of uids) expect(pidsOfUid(uid!)).toEqual([]);
  }, 300_000);

  it('is steppable from outside: start, step, endStep, finish', async () => {
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const out = outDir();
    const episode = createEpisode(task, {
      outDir: out,
      createWorld: createSandboxWorld,
      agentName: 'trainer',
    });
    const messages = await episode.start();
    expect(messages.at(-1)).toMatchObject({ role: 'user' });
    const [first] = await episode.step(bash('pwd; ls; echo $HOME; cd /tmp && export KAROTTE_X=persisted'));
    expect(first!.exitCode).toBe(0);
    expect(first!.stdout).toContain('orders.csv');
    const [second] = await episode.step(bash('pwd; echo $KAROTTE_X'));
    expect(second!.stdout).toBe('/tmp\npersisted\n');
    const [bad] = await episode.step({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'x', type: 'function', function: { name: 'bash', arguments: '{not json' } }],
    });
    expect(bad!.note).toContain('malformed arguments');
    const [timed] = await episode.step({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 't',
          type: 'function',
          function: { name: 'bash', arguments: JSON.stringify({ command: 'sleep 30', timeoutMs: 1000 }) },
        },
      ],
    });
    expect(timed!.timedOut).toBe(true);
    expect(timed!.durationMs).toBeLessThan(10_000);
    const outcome = await episode.endStep();
    expect(outcome.verdict.status).toBe('failed');
    expect(episode.done).toBe(true);
    const result = await episode.finish();
    expect(result).toMatchObject({ status: 'failed', score: 0, agent: 'trainer', turns: 4 });
    const saved = JSON.parse(fs.readFileSync(path.join(out, 'result.json'), 'utf8')) as { status: string };
    expect(saved.status).toBe('failed');
  }, 120_000);

  it('an aborted episode tears down and reports error', async () => {
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const controller = new AbortController();
    const pending = runEpisode(task, createReplayAgent([bash('sleep 600')]), {
      outDir: outDir(),
      createWorld: createSandboxWorld,
      abortSignal: controller.signal,
    });
    setTimeout(() => {
      controller.abort();
    }, 4000);
    const result = await pending;
    expect(result.status).toBe('error');
    expect(result.error?.code).toBe('ABORTED');
    expect(pidsOfUid(result.sandbox.uid!)).toEqual([]);
  }, 120_000);
});

describe('multi-step tasks defined in code', () => {
  it('keeps the working directory between steps, restarts the shell after the reap, and grades each step', async () => {
    const { createFunctionJudge, createRegexJudge } = await import('@karotte/grader');
    const { defineTask } = await import('./define-task.js');
    const task = defineTask({
      id: 'two-steps',
      limits: { pids: 128, diskBytes: 16 * 1024 * 1024, memoryBytes: 256 * 1024 * 1024 },
      steps: [
        {
          instructions: 'Write one to a.txt.',
          submission: ['a.txt'],
          judge: createFunctionJudge(({ submissionDir }) => (read(submissionDir, 'a.txt') === 'one' ? 1 : 0)),
        },
        {
          instructions: 'Append two.',
          submission: ['b.txt'],
          judge: createFunctionJudge(({ submissionDir }) =>
            read(submissionDir, 'b.txt') === 'one two' ? 1 : 0,
          ),
        },
      ],
    });
    const out = outDir();
    const episode = createEpisode(task, { outDir: out, createWorld: createSandboxWorld });
    await episode.start();
    await episode.step(bash('echo one > a.txt; sleep 1000 &'));
    await episode.step({ role: 'assistant', content: 'done with a' });
    const first = await episode.endStep();
    expect(first.verdict).toMatchObject({ status: 'passed', score: 1 });
    expect(first.verdict.reap?.confirmed).toBe(true);
    expect(episode.done).toBe(false);
    expect(episode.messages.at(-1)).toMatchObject({ role: 'user', content: 'Append two.' });
    const [obs] = await episode.step(bash('echo "$(cat a.txt) two" > b.txt; cat b.txt'));
    expect(obs!.stdout).toContain('one two');
    const second = await episode.endStep();
    expect(second.verdict).toMatchObject({ status: 'passed', score: 1 });
    const result = await episode.finish();
    expect(result).toMatchObject({ status: 'passed', score: 1 });
    expect(result.steps).toHaveLength(2);
    expect(pidsOfUid(result.sandbox.uid!)).toEqual([]);
    // The regex judge sees the final answer of the step.
    const regexTask = defineTask({
      id: 'final-answer',
      instructions: 'Say 42.',
      submission: ['x'],
      judge: createRegexJudge({ patterns: ['\\b42\\b'] }),
    });
    const regexResult = await runEpisode(
      regexTask,
      createReplayAgent([{ role: 'assistant', content: 'The answer is 42.' }]),
      { outDir: outDir(), createWorld: createSandboxWorld },
    );
    expect(regexResult).toMatchObject({ status: 'passed', score: 1 });
  }, 180_000);
});

describe('judges resolved when the task loads', () => {
  it("a task's grader.timeoutMs bounds its grader: past it the run fails with TIMEOUT, score 0", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-core-timeout-'));
    made.push(dir);
    fs.chmodSync(dir, 0o755);
    fs.writeFileSync(
      path.join(dir, 'task.json'),
      JSON.stringify({
        id: 'slow-grader',
        instructions: 'Write 1 to answer.txt.',
        submission: ['answer.txt'],
        grader: { script: 'grade.mjs', timeoutMs: 1000 },
      }),
    );
    // A grader that would score 1 if it were given the time.
    fs.writeFileSync(
      path.join(dir, 'grade.mjs'),
      "import fs from 'node:fs';\nawait new Promise((r) => setTimeout(r, 30_000));\nfs.writeFileSync(process.env.KAROTTE_SCORE_FILE, JSON.stringify({ score: 1 }));\n",
    );
    const task = await loadTask(dir);
    const result = await runEpisode(task, createReplayAgent([bash('echo 1 > answer.txt')]), {
      outDir: outDir(),
      createWorld: createSandboxWorld,
    });
    expect(result.error).toBeNull();
    expect(result).toMatchObject({ status: 'failed', score: 0 });
    const verdict = result.steps[0]?.verdict;
    expect(verdict?.judge?.failure?.reason).toBe('TIMEOUT');
    expect(verdict?.timings.judgeMs).toBeLessThan(20_000);
  }, 120_000);
});

describe('faults and limits outside the student', () => {
  async function twoSteps() {
    const { createFunctionJudge } = await import('@karotte/grader');
    const { defineTask } = await import('./define-task.js');
    return defineTask({
      id: 'two-steps-faults',
      limits: { pids: 128, diskBytes: 16 * 1024 * 1024, memoryBytes: 256 * 1024 * 1024 },
      steps: [
        {
          instructions: 'Write one to a.txt.',
          submission: ['a.txt'],
          judge: createFunctionJudge(({ submissionDir }) => (read(submissionDir, 'a.txt') === 'one' ? 1 : 0)),
        },
        {
          instructions: 'Write two to b.txt.',
          submission: ['b.txt'],
          judge: createFunctionJudge(({ submissionDir }) => (read(submissionDir, 'b.txt') === 'two' ? 1 : 0)),
        },
      ],
    });
  }

  function scripted(name: string, turns: ((call: number) => Promise<AssistantMessage>)[]): Agent {
    let call = 0;
    return {
      name,
      next: () => {
        const turn = turns[Math.min(call, turns.length - 1)]!;
        call += 1;
        return turn(call);
      },
    };
  }

  function transcriptEvents(dir: string): { type: string; code?: string }[] {
    return fs
      .readFileSync(path.join(dir, 'transcript.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; code?: string });
  }

  it('an agent that ignores the signal is still bounded by the wall-time limit, and what exists is graded', async () => {
    const { createFunctionJudge } = await import('@karotte/grader');
    const { defineTask } = await import('./define-task.js');
    const task = defineTask({
      id: 'hanging-agent',
      instructions: 'Write one to a.txt.',
      submission: ['a.txt'],
      limits: { wallTimeMs: 3000, pids: 128, diskBytes: 16 * 1024 * 1024, memoryBytes: 256 * 1024 * 1024 },
      judge: createFunctionJudge(({ submissionDir }) => (read(submissionDir, 'a.txt') === 'one' ? 1 : 0)),
    });
    // Second turn: a model call that never returns and never looks at its abort signal.
    const agent = scripted('hangs', [
      () => Promise.resolve(bash('echo one > a.txt')),
      () => new Promise<AssistantMessage>(() => undefined),
    ]);
    const started = performance.now();
    const result = await runEpisode(task, agent, { outDir: outDir(), createWorld: createSandboxWorld });
    // Bounded by the 3 s limit plus grading and teardown, not by the agent.
    expect(performance.now() - started).toBeLessThan(60_000);
    expect(result.wallTimeExceeded).toBe(true);
    expect(result.status).toBe('failed');
    expect(result.misbehavior.map((m) => m.code)).toContain('WALL_TIME_LIMIT');
    expect(result.steps).toHaveLength(1);
    expect(pidsOfUid(result.sandbox.uid!)).toEqual([]);
  }, 120_000);

  it('an agent that throws in a later step is an error (AGENT_FAILED), never a failure of the student', async () => {
    const out = outDir();
    const agent = scripted('throws', [
      () => Promise.resolve(bash('echo one > a.txt')),
      () => Promise.resolve({ role: 'assistant', content: 'step one done' }),
      () => Promise.reject(new Error('the model API is down')),
    ]);
    const result = await runEpisode(await twoSteps(), agent, {
      outDir: out,
      createWorld: createSandboxWorld,
    });
    expect(result.steps[0]?.verdict).toMatchObject({ status: 'passed', score: 1 });
    expect(result).toMatchObject({ status: 'error', score: 0, error: { code: 'AGENT_FAILED' } });
    expect(result.error?.message).toContain('the model API is down');
    expect(transcriptEvents(out).filter((event) => event.type === 'error')).toHaveLength(1);
    expect(pidsOfUid(result.sandbox.uid!)).toEqual([]);
  }, 120_000);

  it("a world that cannot run a command (a failed rebuild) is the host's fault: error with its code", async () => {
    // Faked: making a real sandbox rebuild fail needs a broken host. The world is the real
    // sandbox; only its exec throws, in step 2, what a failed rebuild throws.
    const { SandboxError } = await import('@karotte/sandbox');
    let real: StudentWorld | undefined;
    let execs = 0;
    const createWorld: WorldFactory = async (spec) => {
      real = await createSandboxWorld(spec);
      const world = real;
      return {
        get uid() {
          return world.uid;
        },
        get workDir() {
          return world.workDir;
        },
        get handle() {
          return world.handle;
        },
        get network() {
          return world.network;
        },
        exec: (command, options) => {
          execs += 1;
          if (execs === 2) {
            return Promise.reject(
              new SandboxError('SETUP_FAILED', 'the sandbox init died right after each of 3 restarts'),
            );
          }
          return world.exec(command, options);
        },
        limitHits: () => world.limitHits(),
        destroy: () => world.destroy(),
      };
    };
    const out = outDir();
    const agent = scripted('honest', [
      () => Promise.resolve(bash('echo one > a.txt')),
      () => Promise.resolve({ role: 'assistant', content: 'step one done' }),
      () => Promise.resolve(bash('echo two > b.txt')),
      () => Promise.resolve({ role: 'assistant', content: 'step two done' }),
    ]);
    const result = await runEpisode(await twoSteps(), agent, { outDir: out, createWorld });
    expect(result.steps[0]?.verdict).toMatchObject({ status: 'passed', score: 1 });
    expect(result).toMatchObject({ status: 'error', score: 0, error: { code: 'SETUP_FAILED' } });
    expect(transcriptEvents(out).filter((event) => event.type === 'error')).toHaveLength(1);
    expect(pidsOfUid(real!.uid)).toEqual([]);
  }, 120_000);
  it('a failed read of the limit counters is a fault (error), never graded as if no limit was hit', async () => {
    // Faked: a cgroup read that fails needs a broken host. The world is the real sandbox; only
    // its limit read throws, what a failed read of the counters throws.
    const { SystemError } = await import('@karotte/base');
    let real: StudentWorld | undefined;
    const createWorld: WorldFactory = async (spec) => {
      real = await createSandboxWorld(spec);
      const world = real;
      return {
        uid: world.uid,
        workDir: world.workDir,
        handle: world.handle,
        network: world.network,
        exec: (command, options) => world.exec(command, options),
        limitHits: () =>
          Promise.reject(new SystemError('cannot read memory.failcnt', { syscall: 'read', errno: 'EIO' })),
        destroy: () => world.destroy(),
      };
    };
    const out = outDir();
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const result = await runEpisode(task, createReplayAgent(control), { outDir: out, createWorld });
    expect(result).toMatchObject({ status: 'error', score: 0, error: { code: 'SYSTEM_ERROR' } });
    const events = transcriptEvents(out);
    expect(events.filter((event) => event.type === 'error')).toHaveLength(1);
    // Nothing was graded: the honest control would otherwise have passed with score 1.
    expect(events.filter((event) => event.type === 'scored')).toEqual([]);
    expect(pidsOfUid(real!.uid)).toEqual([]);
  }, 120_000);
});

describe("a step's judge made ahead", () => {
  const judgeOf = (result: Awaited<ReturnType<typeof runEpisode>>) => result.steps[0]!.verdict.judge!;

  it('by default its grader world is made while the student works; null makes nothing ahead', async () => {
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const ahead = await runEpisode(task, createReplayAgent(control), {
      outDir: outDir(),
      createWorld: createSandboxWorld,
    });
    expect(ahead).toMatchObject({ status: 'passed', score: 1 });
    expect(judgeOf(ahead).timings!.preparedMs).toBeGreaterThan(0);
    const plain = await runEpisode(task, createReplayAgent(control), {
      outDir: outDir(),
      createWorld: createSandboxWorld,
      prepareJudge: null,
    });
    expect(plain).toMatchObject({ status: 'passed', score: 1 });
    expect(judgeOf(plain).timings!.preparedMs).toBeUndefined();
  });

  it('a preparation that fails is no fault: the judge sets up when it grades', async () => {
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const result = await runEpisode(task, createReplayAgent(control), {
      outDir: outDir(),
      createWorld: createSandboxWorld,
      prepareJudge: () => Promise.reject(new Error('no grader world ahead today')),
    });
    expect(result).toMatchObject({ status: 'passed', score: 1, error: null });
    expect(judgeOf(result).timings!.preparedMs).toBeUndefined();
  });

  it('is released when the episode ends before grading (its world could not be made)', async () => {
    const { prepareJudge } = await import('@karotte/grader');
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    let made = 0;
    let disposed = 0;
    let ready: () => void = () => undefined;
    const preparedNow = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const result = await runEpisode(task, createReplayAgent(control), {
      outDir: outDir(),
      // Fails once the judge is made, so the episode ends holding a prepared judge.
      createWorld: async () => {
        await preparedNow;
        throw new Error('no sandbox today');
      },
      prepareJudge: async (judge, options) => {
        const prepared = await prepareJudge(judge, options);
        if (prepared === null) return null;
        made += 1;
        ready();
        return {
          ...prepared,
          dispose: async () => {
            disposed += 1;
            await prepared.dispose();
          },
        };
      },
    });
    expect(result.status).toBe('error');
    expect({ made, disposed }).toEqual({ made: 1, disposed: 1 });
  });
});
