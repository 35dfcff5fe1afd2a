// The watchdog tier, for real: a test uid grows its RSS, RAM-backed files and SysV shared
// memory past the watchdog's limit and is reaped by the callback. Safety: every hog runs
// inside a cgroup group whose (larger) limits were just read back, so a watchdog that misses
// cannot hurt the host; the tests check the group's OOM counter stayed at zero, so it was the
// watchdog that acted.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import {
  asUid,
  killUid,
  pidsOfUid,
  runBounded,
  tempDir,
  testUid,
  tmpfsDir,
  waitFor,
} from '../../../test/support/index.js';
import { createGroup } from './group.js';
import type { LimitGroup } from './group.js';
import { createWatchdog, readUidUsage } from './watchdog.js';
import type { Watchdog, WatchdogViolation } from './watchdog.js';

const cleanups: (() => Promise<void> | void)[] = [];
let safetyNet: LimitGroup;
let uid = 0;

beforeEach(async () => {
  const state = tempDir('limits-state');
  cleanups.push(state.cleanup);
  safetyNet = await createGroup({ stateDir: state.dir, memoryBytes: 384 * MiB, pids: 256 });
  cleanups.push(async () => {
    await safetyNet.remove();
  });
  expect(safetyNet.limits.memoryBytes).toBe(384 * MiB);
  uid = testUid();
  cleanups.push(() => killUid(uid));
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

/** A watchdog whose callback SIGKILLs the snapshot's pids (what the reaper would do, simplified). */
function watch(options: { memoryBytes?: number; pidsMax?: number; ramRoots?: string[] }): {
  watchdog: Watchdog;
  violations: WatchdogViolation[];
} {
  const violations: WatchdogViolation[] = [];
  const watchdog = createWatchdog({
    uid,
    pollMs: 20,
    ...options,
    onViolation: (violation) => {
      violations.push(violation);
      for (const pid of violation.reading.pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    },
  });
  cleanups.push(() => watchdog.stop());
  return { watchdog, violations };
}

async function oomKills(): Promise<number> {
  return (await safetyNet.events()).filter((event) => event.limit === 'memory').length;
}

describe('watchdog (detected_and_reaped)', () => {
  it('reaps a process whose RSS grows past the limit', async () => {
    const { watchdog, violations } = watch({ memoryBytes: 48 * MiB, ramRoots: [] });
    expect(watchdog.contract).toBe('detected_and_reaped');
    // Grows about 1 MiB every 10 ms up to 200 MiB: tail buffers the unterminated line.
    const run = await runBounded(
      [
        ...safetyNet.launchPrefix(),
        ...asUid(uid, [
          '/bin/sh',
          '-c',
          'i=0; while [ $i -lt 200 ]; do /usr/bin/head -c 1048576 /dev/zero; sleep 0.01; i=$((i+1)); done | /usr/bin/tail -n 1 >/dev/null',
        ]),
      ],
      60_000,
    );
    expect(run.signal ?? run.code).not.toBe(0);
    expect(violations.length).toBeGreaterThan(0);
    expect(violations[0]!.limit).toBe('memory');
    expect(violations[0]!.reading.rssBytes).toBeGreaterThan(48 * MiB);
    expect(watchdog.events()[0]).toMatchObject({
      limit: 'memory',
      kind: 'reaped',
      source: 'watchdog',
      limitValue: 48 * MiB,
    });
    expect(watchdog.peakBytes).toBeLessThan(200 * MiB);
    expect(await oomKills()).toBe(0);
  });

  it('counts RAM-backed files the uid owns (tmpfs), and keeps reporting while they persist', async () => {
    const mount = tmpfsDir('limits-wd-tmpfs', 'size=512m,mode=1777');
    cleanups.push(mount.cleanup);
    // Hide the file in a directory of another owner: the walk descends into everyone's directories.
    const hidden = path.join(mount.dir, 'other');
    fs.mkdirSync(hidden);
    fs.chmodSync(hidden, 0o1777);
    const { watchdog, violations } = watch({ memoryBytes: 32 * MiB, ramRoots: [mount.dir] });
    // Up to 160 MiB of file, 1 MiB every 10 ms, then the writer idles: far past the limit, so
    // a watchdog that a loaded machine delays by a few polls still catches it mid-write (the
    // safety net's 384 MiB holds the whole file).
    const run = await runBounded(
      [
        ...safetyNet.launchPrefix(),
        ...asUid(uid, [
          '/bin/sh',
          '-c',
          'i=0; while [ $i -lt 160 ]; do /usr/bin/head -c 1048576 /dev/zero >> "$1/fill"; sleep 0.01; i=$((i+1)); done; sleep 30',
          'fill',
          hidden,
        ]),
      ],
      60_000,
    );
    // Killed while writing: at the first poll past 32 MiB of file + RSS.
    expect(run.signal).toBe('SIGKILL');
    const fill = path.join(hidden, 'fill');
    expect(fs.statSync(fill).size).toBeLessThan(160 * MiB);
    expect(violations[0]!.reading.totalBytes).toBeGreaterThan(32 * MiB);
    expect(violations[0]!.reading.ramFileBytes).toBeGreaterThan(16 * MiB);
    // Grow the (still uid-owned) file past the limit on its own: no process of the uid is left.
    fs.appendFileSync(fill, Buffer.alloc(Math.max(0, 40 * MiB - fs.statSync(fill).size)));
    expect(fs.statSync(fill).uid).toBe(uid);
    await waitFor(() => pidsOfUid(uid).length === 0, 10_000);
    const seen = violations.length;
    // The file survives SIGKILL: the violation stays until it is deleted.
    await waitFor(() => violations.length > seen, 10_000);
    expect(violations.at(-1)!.reading.pids).toEqual([]);
    expect(violations.at(-1)!.reading.ramFileBytes).toBeGreaterThanOrEqual(40 * MiB);
    // A poll that was reading at the deletion may still report it: count the reads that begin
    // after it (each poll reads through watchdog.read(), one poll at a time), not the clock.
    const read = watchdog.read.bind(watchdog);
    fs.rmSync(path.join(hidden, 'fill'));
    let readsSinceRemoval = 0;
    watchdog.read = async () => {
      const reading = await read();
      readsSinceRemoval += 1;
      return reading;
    };
    // Once deleted, readings are under the limit again and the reports stop.
    expect((await read()).totalBytes).toBeLessThan(32 * MiB);
    // One poll that began after the deletion has read: the one in flight at the deletion is done.
    await waitFor(() => readsSinceRemoval >= 1, 10_000);
    const settled = violations.length;
    // Ten more polls, each after the deletion: none reports.
    await waitFor(() => readsSinceRemoval >= 11, 10_000);
    expect(violations.length).toBe(settled);
    expect(await oomKills()).toBe(0);
  });

  it('treats a flood of entries past the walk budget as unbounded (a violation)', async () => {
    const mount = tempDir('limits-wd-flood');
    cleanups.push(mount.cleanup);
    fs.chmodSync(mount.dir, 0o1777);
    const made = await runBounded(
      asUid(uid, [
        '/bin/sh',
        '-c',
        'cd "$1" && i=0; while [ $i -lt 300 ]; do printf "" > "e$i"; i=$((i+1)); done',
        'flood',
        mount.dir,
      ]),
      60_000,
    );
    expect(made.code).toBe(0);
    const reading = await readUidUsage(uid, { entryBudget: 100, ramRoots: [mount.dir] });
    expect(reading.unbounded).toBe(true);
    const { violations } = watch({ memoryBytes: 512 * MiB, ramRoots: [mount.dir] });
    // Budget defaults to 10,000: 300 entries are bounded.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(violations).toEqual([]);
    const tight = createWatchdog({
      uid,
      pollMs: 20,
      memoryBytes: 512 * MiB,
      entryBudget: 100,
      ramRoots: [mount.dir],
      onViolation: (violation) => void violations.push(violation),
    });
    cleanups.push(() => tight.stop());
    await waitFor(() => violations.length > 0, 10_000);
    expect(violations[0]!.reason).toMatch(/more than 100 entries/);
  });

  it('charges SysV shared memory to its creator', async () => {
    // perl's shmget/shmwrite builtins: 80 MiB segment, touched, handed to nobody.
    const created = await runBounded(
      [
        ...safetyNet.launchPrefix(),
        ...asUid(uid, [
          '/usr/bin/perl',
          '-e',
          'my $n = 80 << 20; my $id = shmget(0, $n, 0o1600) // die "shmget $!"; shmwrite($id, "x" x $n, 0, $n) or die; print $id',
        ]),
      ],
      60_000,
    );
    expect(created.code).toBe(0);
    const shmid = Number(created.stdout.trim());
    cleanups.push(() => {
      execFileSync('/usr/bin/perl', ['-e', `shmctl(${shmid}, 0, 0)`]);
    });
    const reading = await readUidUsage(uid, { entryBudget: 100, ramRoots: [] });
    expect(reading.sysvShmBytes).toBeGreaterThanOrEqual(80 * MiB);
    expect(reading.pids).toEqual([]);
    const { violations } = watch({ memoryBytes: 64 * MiB, ramRoots: [] });
    await waitFor(() => violations.length > 0, 10_000);
    expect(violations[0]!.reading.sysvShmBytes).toBeGreaterThanOrEqual(80 * MiB);
  });

  it('reaps a uid running more processes than allowed', async () => {
    const { violations } = watch({ pidsMax: 8, ramRoots: [] });
    const run = await runBounded(
      [
        ...safetyNet.launchPrefix(),
        ...asUid(uid, ['/bin/sh', '-c', 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 30 & done; wait']),
      ],
      60_000,
    );
    expect(run.signal).toBe('SIGKILL');
    expect(violations[0]).toMatchObject({ limit: 'pids' });
    expect(violations[0]!.reading.pids.length).toBeGreaterThan(8);
  });
});
