// Memory the kernel pins for a student outside what a v1 memory cgroup counts, on this host's
// real cgroups: locked memory (perf ring buffers are bounded only by RLIMIT_MEMLOCK, per
// process) and TCP buffers (v1 charges them only with memory.kmem.tcp.limit_in_bytes).
//
// In the `quiet` project (alone, after every other test): the flood is measured against the
// host's own TCP memory (/proc/net/sockstat), which the rest of the suite's loopback traffic
// moves by tens of MiB on a loaded 2-core host.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { asUid, killUid, runBounded, tempDir, testUid, waitFor } from '../../../test/support/index.js';
import { DEFAULT_MEMLOCK_BYTES } from './spec.js';
import { createGroup } from './group.js';
import type { LimitGroup } from './group.js';

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

/** Read a cgroup file of the group directly (not through the package), for read-back checks. */
function readCgroupFile(created: LimitGroup, file: string): string {
  const dir = created.dirs.find((candidate) => fs.existsSync(path.join(candidate, file)));
  if (dir === undefined) throw new Error(`no ${file} in ${created.dirs.join(', ')}`);
  return fs.readFileSync(path.join(dir, file), 'utf8').trim();
}

/** The host's TCP memory in use, in pages (`/proc/net/sockstat`, `TCP: ... mem N`). */
function hostTcpPages(): number {
  const line = fs
    .readFileSync('/proc/net/sockstat', 'utf8')
    .split('\n')
    .find((text) => text.startsWith('TCP:'));
  const pages = / mem (\d+)/.exec(line ?? '')?.[1];
  if (pages === undefined) throw new Error(`no TCP mem in /proc/net/sockstat: ${line ?? '(no TCP line)'}`);
  return Number(pages);
}

const PAGE = 4096;
const TCP_FLOOD = fs.readFileSync(
  path.join(import.meta.dirname, '..', 'test', 'fixtures', 'tcp-flood.pl'),
  'utf8',
);

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

describe("TCP buffers on the sandbox's own loopback", () => {
  it('v1: memory.kmem.tcp.limit_in_bytes is a quarter of the memory limit, written at creation and read back', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 64 * MiB, pids: 32, eventPollMs: 0 });
    if (created.backend === 'cgroup-v2') {
      // v2 charges socket buffers to memory.max by default: there is nothing of its own to set.
      expect(created.limits.tcpMemoryBytes).toBeNull();
      return;
    }
    expect(readCgroupFile(created, 'memory.kmem.tcp.limit_in_bytes')).toBe(String(16 * MiB));
    expect(created.limits.tcpMemoryBytes).toBe(16 * MiB);
    expect(created.contracts.memory.reason).toContain('TCP buffers');
  });

  it('a loopback flood in a 64 MiB group cannot pin far more than its limit (host sockstat watched)', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 64 * MiB, pids: 32, eventPollMs: 0 });
    const bound = created.limits.tcpMemoryBytes ?? created.limits.memoryBytes;
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    const before = hostTcpPages();
    // 50 pairs whose receivers never read, written for 3 s: unbounded, that pins ~200 MiB of
    // kernel memory on this host (4 MiB a pair).
    const flood = spawn(created.launchPrefix()[0]!, [
      ...created.launchPrefix().slice(1),
      ...asUid(uid, ['/usr/bin/perl', '-e', TCP_FLOOD, '50', '3']),
    ]);
    cleanups.push(() => {
      flood.kill('SIGKILL');
    });
    let output = '';
    flood.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    flood.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    await waitFor(() => /^sent \d+$/m.test(output) || flood.exitCode !== null, 30_000);
    const held = hostTcpPages();
    const usage =
      created.backend === 'cgroup-v1'
        ? Number(readCgroupFile(created, 'memory.kmem.tcp.max_usage_in_bytes'))
        : null;
    flood.kill('SIGKILL');
    expect(output).toMatch(/^sent \d+$/m);
    const sent = Number(/^sent (\d+)$/m.exec(output)?.[1]);
    const pinned = (held - before) * PAGE;
    // The flood holds at most its limit (plus other tests' traffic on this host, a few MiB).
    expect(pinned).toBeLessThan(bound + 16 * MiB);
    expect(sent).toBeLessThan(bound + 16 * MiB);
    // The kernel force-charges a little past the limit (ACKs, the segment in flight), never far.
    if (usage !== null) expect(usage).toBeLessThanOrEqual(bound * 1.25);
    process.stdout.write(
      `[karotte] loopback flood: sent ${sent} bytes, host TCP memory +${pinned} bytes, group peak ${String(usage)} bytes, limit ${bound} bytes\n`,
    );
  });
});
