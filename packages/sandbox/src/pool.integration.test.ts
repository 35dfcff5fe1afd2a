// The warm pool against real sandboxes (root): it hands out fresh, verified sandboxes in a few
// milliseconds, never one that was used, discards one whose limits were changed behind its
// back or that grew too old, drains on close(), and what a killed harness's pool held is
// reclaimed by the next start like any sandbox.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { pidsOfUid, waitFor } from '../../../test/support/index.js';
import {
  createSandbox,
  createSandboxPool,
  listLeases,
  readinessProblems,
  reclaimStaleSandboxes,
  type Sandbox,
  type SandboxPool,
} from './index.js';

const LIMITS = { diskBytes: 16 * MiB, memoryBytes: 128 * MiB, pids: 64 };
// A state directory and uid range of this file's own: what the pools made is told apart from
// every other sandbox on the host (other tests, other harnesses) by where it is leased.
const STATE_DIR = `/run/karotte-test-pool-${process.pid}`;
const UID_RANGE = { first: 2_500_000_000 + (process.pid % 100_000) * 1_000, count: 1_000 };
const OPTIONS = { limits: LIMITS, stateDir: STATE_DIR, uidRange: UID_RANGE };
const pools: SandboxPool[] = [];
const boxes: Sandbox[] = [];
afterEach(async () => {
  try {
    for (const box of boxes.splice(0)) await box.destroy().catch(() => undefined);
    for (const pool of pools.splice(0)) await pool.close();
  } finally {
    // A test that failed between a kill and its reclaim leaves the killed harness's sandboxes.
    await reclaimStaleSandboxes(STATE_DIR);
    expect(leasedIds().size).toBe(0);
    fs.rmSync(STATE_DIR, { recursive: true, force: true });
  }
});

function pool(size: number, maxAgeMs?: number): SandboxPool {
  const made = createSandboxPool(OPTIONS, { size, ...(maxAgeMs === undefined ? {} : { maxAgeMs }) });
  pools.push(made);
  return made;
}

/** Leased uids of this file's state directory, by sandbox id. */
function leasedIds(): Map<string, number> {
  const out = new Map<string, number>();
  if (!fs.existsSync(STATE_DIR)) return out;
  for (const lease of listLeases(STATE_DIR)) {
    if (lease.record !== undefined) out.set(lease.record.sandboxId, lease.uid);
  }
  return out;
}

/** The cgroup v1 pids directory (or v2 directory) of sandbox `id`. */
function pidsDirOf(id: string): string {
  for (const dir of [`/sys/fs/cgroup/pids/karotte-${id}`, `/sys/fs/cgroup/unified/karotte-${id}`]) {
    if (fs.existsSync(path.join(dir, 'pids.max'))) return dir;
  }
  throw new Error(`no pids group for ${id}`);
}

describe('createSandboxPool', () => {
  it('hands out fresh sandboxes that work, each once, and drains on close()', async () => {
    const warm = pool(2);
    await waitFor(() => warm.stats().idle === 2, 30_000);
    const pooledIds = [...leasedIds().keys()];
    expect(pooledIds).toHaveLength(2);
    const started = performance.now();
    const box = await warm.acquire();
    const acquireMs = performance.now() - started;
    boxes.push(box);
    expect(pooledIds).toContain(box.id);
    expect(warm.stats()).toMatchObject({ warm: 1, cold: 0, discarded: 0 });
    // A handed-out sandbox costs a re-check, not a create (a cold one takes 100 ms and more).
    expect(acquireMs).toBeLessThan(100);
    expect(box.networkCheck.ok).toBe(true);
    expect(await box.exec('id -u; echo hi > answer.txt; cat answer.txt')).toMatchObject({
      stdout: `${box.uid}\nhi\n`,
      exitCode: 0,
    });
    // Used: it can never be handed out again, and the pool does not hold it any more.
    expect(await readinessProblems(box)).toEqual(['it was used']);
    const second = await warm.acquire();
    boxes.push(second);
    expect(second.id).not.toBe(box.id);
    expect(second.uid).not.toBe(box.uid);
    expect(await second.exec('cat answer.txt 2>&1; ls -A')).toMatchObject({
      stdout: 'cat: answer.txt: No such file or directory\n',
    });
    for (const handed of boxes.splice(0)) await handed.destroy();
    // The pool refills in the background; close() drains what it made.
    await waitFor(() => warm.stats().idle === 2, 30_000);
    const refilled = [...leasedIds().keys()];
    expect(refilled).toHaveLength(2);
    await warm.close();
    const left = leasedIds();
    for (const id of refilled) expect(left.has(id), `lease of ${id}`).toBe(false);
    await expect(warm.acquire()).rejects.toMatchObject({ code: 'DESTROYED' });
  });

  it('discards a pooled sandbox whose limits changed behind its back, and one too old', async () => {
    const warm = pool(1, 1_000);
    await waitFor(() => warm.stats().idle === 1, 30_000);
    const [id] = [...leasedIds().keys()];
    const pidsMax = path.join(pidsDirOf(id!), 'pids.max');
    expect(fs.readFileSync(pidsMax, 'utf8').trim()).toBe(String(LIMITS.pids));
    fs.writeFileSync(pidsMax, String(LIMITS.pids * 4));
    expect(fs.readFileSync(pidsMax, 'utf8').trim()).toBe(String(LIMITS.pids * 4));
    const box = await warm.acquire();
    boxes.push(box);
    expect(box.id).not.toBe(id);
    expect(warm.stats()).toMatchObject({ discarded: 1, cold: 1 });
    expect(warm.stats().lastDiscard).toMatch(/pids\.max reads 256, not 64/);
    expect(box.appliedLimits.pids).toBe(LIMITS.pids);
    // The discarded one is torn down: its lease goes.
    await waitFor(() => !leasedIds().has(id!), 15_000);
    // Too old: made, then left past maxAgeMs, it is never handed out.
    await waitFor(() => warm.stats().idle === 1, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    const fresh = await warm.acquire();
    boxes.push(fresh);
    expect(warm.stats().discarded).toBeGreaterThanOrEqual(2);
    expect(warm.stats().lastDiscard).toMatch(/older than 1000 ms/);
  });

  it("a killed harness's pool is reclaimed by the next start: leases, processes, groups", async () => {
    const script = [
      `const { createSandboxPool } = await import(${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)});`,
      `const pool = createSandboxPool(${JSON.stringify(OPTIONS)}, { size: 2 });`,
      'const wait = () => pool.stats().idle === 2 ? console.log("filled") : setTimeout(wait, 50);',
      'wait();',
      'setInterval(() => undefined, 1000);',
    ].join('\n');
    const harness = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    harness.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    try {
      await waitFor(() => out.includes('filled'), 60_000);
    } finally {
      harness.kill('SIGKILL');
    }
    await new Promise((resolve) => harness.once('exit', resolve));
    const orphaned = [...leasedIds()];
    expect(orphaned).toHaveLength(2);
    // The harness's death ended each world (its init watches the harness's pipe); the leases,
    // groups and quotas stay until someone reclaims them.
    for (const [id] of orphaned) expect(fs.existsSync(`/sys/fs/cgroup/pids/karotte-${id}`)).toBe(true);
    const reclaimed = await reclaimStaleSandboxes(STATE_DIR);
    for (const [id, uid] of orphaned) {
      expect(reclaimed).toContain(uid);
      expect(leasedIds().has(id)).toBe(false);
      expect(pidsOfUid(uid)).toEqual([]);
      expect(fs.existsSync(`/sys/fs/cgroup/pids/karotte-${id}`)).toBe(false);
    }
    // And a sandbox made afterwards is as any other.
    const box = await createSandbox(OPTIONS);
    boxes.push(box);
    expect(box.networkCheck.ok).toBe(true);
  });
});
