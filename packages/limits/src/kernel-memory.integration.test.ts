// Memory the kernel pins for a student outside what a v1 memory cgroup counts, on this host's
// real cgroups: locked memory (perf ring buffers are bounded only by RLIMIT_MEMLOCK, per
// process) and TCP buffers (v1 charges them only with memory.kmem.tcp.limit_in_bytes).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { killUid, tempDir, testUid, waitFor } from '../../../test/support/index.js';
import { DEFAULT_MEMLOCK_BYTES } from './spec.js';
import { createGroup } from './group.js';
import type { LimitGroup } from './group.js';
import { asUid, runBounded } from './test-helpers.js';

let counter = 0;
const uniqueName = (): string => `karotte-test-kmem-${process.pid}-${++counter}-${Date.now() % 100000}`;

const cleanups: (() => Promise<void> | void)[] = [];
let stateDir = '';

beforeEach(() => {
  const state = tempDir('limits-state');
  stateDir = state.dir;
  cleanups.push(state.cleanup);
});

afterEach(async () => {
  const errors: unknown[] = [];
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup();
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length > 0) throw errors[0];
});

async function group(options: Parameters<typeof createGroup>[0]): Promise<LimitGroup> {
  const created = await createGroup({ stateDir, ...options });
  cleanups.push(async () => {
    await created.remove();
  });
  return created;
}

/** The real uid of a live pid, or undefined. */
function uidOf(pid: number): number | undefined {
  try {
    const real = /^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return real === undefined ? undefined : Number(real);
  } catch {
    return undefined;
  }
}

describe('RLIMIT_MEMLOCK of every process the launch prefix starts', () => {
  it('is 64 KiB, soft and hard, read from /proc/<pid>/limits of a running student process', async () => {
    expect(DEFAULT_MEMLOCK_BYTES).toBe(64 * 1024);
    // The default rlimits, as the sandbox and the grader get them (no memlock given).
    const created = await group({ name: uniqueName(), memoryBytes: 64 * MiB, pids: 32, eventPollMs: 0 });
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    const child = spawn(created.launchPrefix()[0]!, [
      ...created.launchPrefix().slice(1),
      ...asUid(uid, ['/bin/sleep', '30']),
    ]);
    cleanups.push(() => {
      child.kill('SIGKILL');
    });
    const pid = child.pid!;
    // sh, prlimit, setpriv and sleep all exec in place: the pid becomes the student's.
    await waitFor(() => uidOf(pid) === uid, 10_000);
    const limits = fs.readFileSync(`/proc/${pid}/limits`, 'utf8');
    expect(limits).toMatch(/^Max locked memory\s+65536\s+65536\s+bytes/m);
  });

  it('cannot be raised by the student, and a group can be given another value', async () => {
    const created = await group({
      name: uniqueName(),
      memoryBytes: 64 * MiB,
      pids: 32,
      eventPollMs: 0,
      rlimits: { memlockBytes: 0 },
    });
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    const run = await runBounded(
      [
        ...created.launchPrefix(),
        ...asUid(uid, ['/bin/sh', '-c', 'ulimit -l; ulimit -H -l; ulimit -l 1024 && echo raised']),
      ],
      20_000,
    );
    // sh reports RLIMIT_MEMLOCK in KiB.
    expect(run.stdout.split('\n').slice(0, 2)).toEqual(['0', '0']);
    expect(run.stdout).not.toContain('raised');
  });
});
