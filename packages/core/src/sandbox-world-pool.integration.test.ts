// Episodes from a warm pool of sandboxes (root): the first episode of a configuration makes
// its world cold, the ones after it take pooled ones; every episode gets a fresh sandbox
// (a distinct uid, nothing of the last student's), an attack still scores 0, and close()
// leaves no sandbox behind.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SANDBOX_STATE_DIR, listLeases } from '@karotte/sandbox';
import { pidsOfUid, waitFor } from '../../../test/support/index.js';
import { createReplayAgent } from './agent.js';
import { runEpisode } from './episode.js';
import type { AssistantMessage } from './messages.js';
import { createSandboxWorldPool, type SandboxWorldPool } from './sandbox-world.js';
import { loadTask } from './task.js';

const examples = path.resolve(import.meta.dirname, '../../../apps/karotte/examples');
const made: string[] = [];
const pools: SandboxWorldPool[] = [];
afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.close();
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function outDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-episode-pool-'));
  made.push(dir);
  return dir;
}

function bash(command: string): AssistantMessage {
  return {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_0', type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } },
    ],
  };
}

const control = JSON.parse(
  fs.readFileSync(path.join(examples, 'quarterly-revenue', 'control.json'), 'utf8'),
) as AssistantMessage[];

describe('createSandboxWorldPool', () => {
  it('runs episodes on pooled fresh sandboxes: controls pass, a planted file is gone, an attack scores 0', async () => {
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const pool = createSandboxWorldPool({ size: 1 });
    pools.push(pool);
    // The first student leaves a file behind and a background writer; neither may reach the next.
    const first = await runEpisode(
      task,
      createReplayAgent([
        bash(
          'echo planted > /home/student/left-behind.txt; (while :; do echo 1 > answer.txt; sleep 0.05; done) &',
        ),
      ]),
      { outDir: outDir(), createWorld: pool.createWorld },
    );
    expect(first).toMatchObject({ status: 'failed', score: 0 });
    expect(pool.stats()).toMatchObject({ cold: 1, warm: 0 });
    await waitFor(() => pool.stats().idle === 1, 30_000);
    const secondDir = outDir();
    const second = await runEpisode(
      task,
      createReplayAgent([bash('ls -A /home/student; cat left-behind.txt 2>&1 || true'), ...control]),
      { outDir: secondDir, createWorld: pool.createWorld },
    );
    expect(second).toMatchObject({ status: 'passed', score: 1 });
    expect(pool.stats()).toMatchObject({ cold: 1, warm: 1, discarded: 0 });
    expect(second.sandbox.uid).not.toBe(first.sandbox.uid);
    expect(pidsOfUid(first.sandbox.uid!)).toEqual([]);
    // The second student listed its home and tried the file: it saw its own fresh directory.
    const transcript = fs.readFileSync(path.join(secondDir, 'transcript.jsonl'), 'utf8');
    expect(transcript).toContain('left-behind.txt: No such file or directory');
    expect(transcript).not.toContain('planted');
  });

  it('grades in a grader world made before the episode, which the student cannot see or reach', async () => {
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const pool = createSandboxWorldPool({ size: 1 });
    pools.push(pool);
    const options = () => ({
      outDir: outDir(),
      createWorld: pool.createWorld,
      prepareJudge: pool.prepareJudge,
    });
    const first = await runEpisode(task, createReplayAgent(control), options());
    expect(first).toMatchObject({ status: 'passed', score: 1 });
    expect(pool.judgeStats()).toMatchObject({ cold: 1, warm: 0 });
    await waitFor(() => pool.judgeStats().idle === 1 && pool.stats().idle === 1, 30_000);
    const secondOptions = options();
    const second = await runEpisode(
      task,
      createReplayAgent([
        bash(
          'ls -la /var/lib/karotte/grader /var/lib/karotte 2>&1; touch /var/lib/karotte/grader/x 2>&1; true',
        ),
        ...control,
      ]),
      secondOptions,
    );
    expect(second).toMatchObject({ status: 'passed', score: 1 });
    expect(pool.judgeStats()).toMatchObject({ cold: 1, warm: 1 });
    const judge = second.steps[0]!.verdict.judge!;
    expect(judge.timings!.preparedMs).toBeGreaterThan(0);
    expect(judge.timings!.setupMs).toBeLessThan(judge.timings!.preparedMs!);
    // The run made ahead (its directory named by the grader's uid) was out of the student's sight.
    const transcript = fs.readFileSync(path.join(secondOptions.outDir, 'transcript.jsonl'), 'utf8');
    expect(transcript).not.toContain('karotte-grade-');
    expect(fs.existsSync('/var/lib/karotte/grader/x')).toBe(false);
    await pool.close();
    expect(pool.judgeStats().idle).toBe(0);
  });

  it('close() drains the pools: no lease of theirs is left', async () => {
    const task = await loadTask(path.join(examples, 'quarterly-revenue'));
    const pool = createSandboxWorldPool({ size: 2 });
    const result = await runEpisode(task, createReplayAgent(control), {
      outDir: outDir(),
      createWorld: pool.createWorld,
    });
    expect(result.status).toBe('passed');
    await waitFor(() => pool.stats().idle === 2, 30_000);
    // Leases this process holds (other test files run in other processes).
    const ours = (): number =>
      listLeases(DEFAULT_SANDBOX_STATE_DIR).filter((lease) => lease.record?.ownerPid === process.pid).length;
    expect(ours()).toBe(2);
    await pool.close();
    expect(ours()).toBe(0);
    expect(pool.stats().idle).toBe(0);
    await expect(
      runEpisode(task, createReplayAgent(control), { outDir: outDir(), createWorld: pool.createWorld }),
    ).resolves.toMatchObject({ status: 'error' });
  });
});
