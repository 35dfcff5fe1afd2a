import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LimitsError } from './errors.js';
import { runTrusted } from './exec.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    const state = /^State:\s+(\S)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return state !== undefined && state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * The run settles once every process of it has closed its output; a process killed with
 * SIGKILL closes its files early in its exit path, so on a loaded host it can still show as
 * running for a moment after. It must be gone soon after, never left running.
 */
async function expectDies(pid: number): Promise<void> {
  await until(() => !alive(pid), 2_000);
  expect(alive(pid)).toBe(false);
}

describe('runTrusted', () => {
  it('returns the output of a binary that succeeds', async () => {
    await expect(runTrusted('sh', ['-c', 'echo ok'], { code: 'QUOTA_FAILED' })).resolves.toMatchObject({
      stdout: 'ok',
    });
  });

  it('an abort kills every process of the run, not only the direct child, before it settles', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-exec-'));
    made.push(dir);
    const pidFile = path.join(dir, 'step.pid');
    const controller = new AbortController();
    // A script whose step outlives the shell if only the shell is killed (as a quota
    // preparation's fallocate did).
    const run = runTrusted('sh', ['-c', `sleep 30 & echo $! > ${pidFile}; wait`], {
      code: 'QUOTA_FAILED',
      abortSignal: controller.signal,
    });
    await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim() !== '', 10_000);
    const step = Number(fs.readFileSync(pidFile, 'utf8'));
    expect(alive(step)).toBe(true);
    controller.abort();
    const error: unknown = await run.catch((caught: unknown) => caught);
    expect(LimitsError.isInstance(error) && error.code).toBe('ABORTED');
    await expectDies(step);
  });

  it('a timeout kills the whole run too and names the binary', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-exec-'));
    made.push(dir);
    const pidFile = path.join(dir, 'step.pid');
    const error: unknown = await runTrusted('sh', ['-c', `sleep 30 & echo $! > ${pidFile}; wait`], {
      code: 'QUOTA_FAILED',
      timeoutMs: 300,
    }).catch((caught: unknown) => caught);
    expect(LimitsError.isInstance(error) && error.code).toBe('QUOTA_FAILED');
    expect((error as Error).message).toMatch(/^sh .* timed out$/);
    const step = Number(fs.readFileSync(pidFile, 'utf8'));
    expect(step).toBeGreaterThan(0);
    await expectDies(step);
  });
});
