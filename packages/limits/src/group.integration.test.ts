// Real cgroups on this host (v1 for memory, pids, freezer, cpu): a memory hog, a tmpfs filler
// and a fork bomb run as a test uid inside a group whose limits were just read back.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import {
  asUid,
  killUid,
  runBounded,
  tempDir,
  testUid,
  tmpfsDir,
  waitFor,
} from '../../../test/support/index.js';
import { detectCgroups, parseProcCgroup } from './cgroup-detect.js';
import { createGroup } from './group.js';
import type { LimitGroup } from './group.js';
import { toMisbehavior } from './events.js';

let counter = 0;
const uniqueName = (): string => `karotte-test-${process.pid}-${++counter}-${Date.now() % 100000}`;

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

const detection = detectCgroups();
const hierarchy = detection.hierarchy;

describe('cgroup groups on this host', () => {
  it('detects a usable hierarchy (v1 here: the unified mount has no controllers)', () => {
    expect(hierarchy).not.toBeNull();
    if (hierarchy?.version === 1) {
      expect(detection.reasons.join(' ')).toMatch(/cgroup v2/);
    }
  });

  it('creates a group, writes every limit and reads it back, removes it completely', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 96 * MiB, pids: 64, cpuWeight: 50 });
    expect(created.limits.memoryBytes).toBe(96 * MiB);
    expect(created.limits.pids).toBe(64);
    expect(created.limits.cpuWeight).toBe(50);
    if (created.backend === 'cgroup-v1') {
      expect(readCgroupFile(created, 'memory.limit_in_bytes')).toBe(String(96 * MiB));
      if (fs.existsSync(path.join(created.dirs[0]!, 'memory.memsw.limit_in_bytes'))) {
        expect(readCgroupFile(created, 'memory.memsw.limit_in_bytes')).toBe(String(96 * MiB));
      }
      expect(readCgroupFile(created, 'cpu.shares')).toBe('512');
      expect(readCgroupFile(created, 'freezer.state')).toBe('THAWED');
    } else {
      expect(readCgroupFile(created, 'memory.max')).toBe(String(96 * MiB));
      expect(readCgroupFile(created, 'memory.oom.group')).toBe('1');
    }
    expect(readCgroupFile(created, 'pids.max')).toBe('64');
    expect(created.contracts.memory.contract).toBe('prevented');
    expect(created.contracts.pids.contract).toBe('prevented');
    const record = path.join(stateDir, 'groups', `${created.name}.json`);
    expect(fs.existsSync(record)).toBe(true);
    await created.remove();
    for (const dir of created.dirs) expect(fs.existsSync(dir)).toBe(false);
    expect(fs.existsSync(record)).toBe(false);
    await expect(created.remove()).resolves.toEqual({ events: [] });
  });

  it('rounds a memory limit down to the page size and reports the value read back', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 64 * MiB + 1000 });
    expect(created.limits.memoryBytes).toBe(64 * MiB);
  });

  it('recheck() reads every limit back again and names one changed behind its back', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 64 * MiB, pids: 48 });
    expect(await created.recheck()).toEqual([]);
    const pidsDir = created.dirs.find((dir) => fs.existsSync(path.join(dir, 'pids.max')))!;
    fs.writeFileSync(path.join(pidsDir, 'pids.max'), '96');
    expect(fs.readFileSync(path.join(pidsDir, 'pids.max'), 'utf8').trim()).toBe('96');
    expect(await created.recheck()).toEqual([`${pidsDir}/pids.max reads 96, not 48`]);
    await created.remove();
    expect(await created.recheck()).toEqual([`group ${created.name} was removed`]);
  });

  it('refuses a name that already exists, and touches nothing of the existing group', async () => {
    const name = uniqueName();
    const first = await group({ name, memoryBytes: 64 * MiB });
    await expect(createGroup({ stateDir, name, memoryBytes: 64 * MiB })).rejects.toMatchObject({
      code: 'GROUP_EXISTS',
    });
    for (const dir of first.dirs) expect(fs.existsSync(dir)).toBe(true);
  });

  it('v1: fails closed when a write does not take, and removes what it created in every hierarchy', async () => {
    if (hierarchy?.version !== 1) {
      // A v2 host runs the same check in cgroup-v2.test.ts; nothing v1-specific to test here.
      expect(hierarchy?.version).toBe(2);
      return;
    }
    // The cpu "hierarchy" is a plain directory: mkdir works, but it has no cpu.shares, so the
    // write fails after the real memory, pids and freezer groups were made and limited.
    const fake = tempDir('limits-fakecpu');
    cleanups.push(fake.cleanup);
    const name = uniqueName();
    const error = await createGroup({
      stateDir,
      name,
      memoryBytes: 64 * MiB,
      cpuWeight: 200,
      hierarchy: { ...hierarchy, cpu: fake.dir },
    }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'LIMIT_NOT_APPLIED', path: path.join(fake.dir, name, 'cpu.shares') });
    for (const base of [hierarchy.memory, hierarchy.pids, hierarchy.freezer, fake.dir]) {
      expect(fs.existsSync(path.join(base, name))).toBe(false);
    }
    expect(fs.readdirSync(path.join(stateDir, 'groups'))).toEqual([]);
  });

  it('starts a process inside the group through the launch prefix, with oom_score_adj and rlimits', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 64 * MiB, pids: 64 });
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    const prefix = created.launchPrefix({ rlimits: { nofile: 77, fsizeBytes: 5 * MiB } });
    const run = await runBounded(
      [
        ...prefix,
        ...asUid(uid, ['/bin/cat', '/proc/self/cgroup', '/proc/self/oom_score_adj', '/proc/self/limits']),
      ],
      20_000,
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const seen = parseProcCgroup(run.stdout);
    const controllers = created.backend === 'cgroup-v2' ? [''] : ['memory', 'pids', 'freezer', 'cpu'];
    for (const controller of controllers) {
      expect(seen.get(controller), controller).toMatch(new RegExp(`/${created.name}$`));
    }
    expect(run.stdout).toMatch(/^1000$/m);
    expect(run.stdout).toMatch(/^Max open files\s+77\s+77\s+files/m);
    expect(run.stdout).toMatch(/^Max core file size\s+0\s+0\s+bytes/m);
    expect(run.stdout).toMatch(new RegExp(`^Max file size\\s+${5 * MiB}\\s+${5 * MiB}\\s+bytes`, 'm'));
    // The kernel lets an unprivileged process lower its own oom_score_adj, but never below 0
    // (the harness's value): the student can make itself as likely a victim, never less.
    const lower = await runBounded(
      [...prefix, ...asUid(uid, ['/bin/sh', '-c', 'echo -1 > /proc/self/oom_score_adj'])],
      20_000,
    );
    expect(lower.code).not.toBe(0);
  });

  it('fails closed when joining the group is impossible: nothing of the command runs', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 64 * MiB });
    const prefix = created.launchPrefix();
    // Replace the first cgroup.procs path with one that does not exist.
    const at = prefix.findIndex((arg) => arg.endsWith('/cgroup.procs'));
    prefix[at] = '/sys/fs/cgroup/karotte-does-not-exist/cgroup.procs';
    const marker = path.join(stateDir, 'ran');
    const run = await runBounded([...prefix, '/usr/bin/touch', marker], 20_000);
    expect(run.code).toBe(125);
    expect(run.stderr).toMatch(/karotte-launch: cannot join cgroup/);
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('stops a memory hog at the limit, the harness lives on, and reports the OOM kill', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 96 * MiB, pids: 64 });
    // Read back first: the hog only runs inside a limit we have just seen in force.
    expect(created.limits.memoryBytes).toBe(96 * MiB);
    expect(
      Number(
        readCgroupFile(created, created.backend === 'cgroup-v1' ? 'memory.limit_in_bytes' : 'memory.max'),
      ),
    ).toBe(96 * MiB);
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    // `tail` keeps an unterminated line whole: it buffers everything `head` sends (512 MiB).
    const run = await runBounded(
      [
        ...created.launchPrefix(),
        ...asUid(uid, [
          '/bin/sh',
          '-c',
          '/usr/bin/head -c 536870912 /dev/zero | /usr/bin/tail -n 1 > /dev/null',
        ]),
      ],
      60_000,
    );
    expect(run.timedOut).toBe(false);
    expect(run.code).not.toBe(0);
    const usage = await created.usage();
    expect(usage.memoryPeakBytes ?? 0).toBeLessThanOrEqual(96 * MiB);
    const events = await created.events();
    const oom = events.find((event) => event.limit === 'memory');
    expect(oom).toMatchObject({ limit: 'memory', kind: 'oom_kill', limitValue: 96 * MiB });
    expect(oom!.count).toBeGreaterThanOrEqual(1);
    expect(oom!.atMs).toBeGreaterThan(Date.now() - 120_000);
    expect(toMisbehavior(oom!).code).toBe('MEMORY_LIMIT');
    // Events are stable: the same first-seen time on a second read.
    expect((await created.events()).find((event) => event.limit === 'memory')!.atMs).toBe(oom!.atMs);
    expect(process.memoryUsage().rss).toBeGreaterThan(0);
    const removal = await created.remove();
    expect(removal.events.map((event) => event.limit)).toContain('memory');
  });

  it('stops a tmpfs filler at the limit (RAM-backed files count) and reports it', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 96 * MiB, pids: 64 });
    expect(
      Number(
        readCgroupFile(created, created.backend === 'cgroup-v1' ? 'memory.limit_in_bytes' : 'memory.max'),
      ),
    ).toBe(96 * MiB);
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    // A private tmpfs far larger than the limit, so only the memory cgroup can stop the fill.
    const mount = tmpfsDir('limits-tmpfs', 'size=512m,mode=1777');
    cleanups.push(mount.cleanup);
    const run = await runBounded(
      [
        ...created.launchPrefix(),
        ...asUid(uid, ['/usr/bin/dd', 'if=/dev/zero', `of=${mount.dir}/fill`, 'bs=1M', 'count=400']),
      ],
      60_000,
    );
    expect(run.timedOut).toBe(false);
    expect(run.code).not.toBe(0);
    const written = fs.statSync(path.join(mount.dir, 'fill')).size;
    expect(written).toBeLessThanOrEqual(96 * MiB);
    expect(written).toBeGreaterThan(32 * MiB);
    const events = await created.events();
    expect(events.find((event) => event.limit === 'memory')?.kind).toBe('oom_kill');
  });

  it('stops SysV shared memory at the limit (shm pages are charged to the group)', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 96 * MiB, pids: 64 });
    expect(
      Number(
        readCgroupFile(created, created.backend === 'cgroup-v1' ? 'memory.limit_in_bytes' : 'memory.max'),
      ),
    ).toBe(96 * MiB);
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    // Segments outlive their creator: remove whatever this uid created, by id, as root.
    cleanups.push(() => {
      const table = fs.readFileSync('/proc/sysvipc/shm', 'utf8').trim().split('\n');
      const header = table[0]!.trim().split(/\s+/);
      for (const line of table.slice(1)) {
        const fields = line.trim().split(/\s+/);
        if (Number(fields[header.indexOf('cuid')]) === uid) {
          execFileSync('/usr/bin/perl', [
            '-e',
            `shmctl(${fields[header.indexOf('shmid')]}, 0, 0) or die "$!"`,
          ]);
        }
      }
    });
    // perl's builtins: a 256 MiB segment, every page touched.
    const run = await runBounded(
      [
        ...created.launchPrefix(),
        ...asUid(uid, [
          '/usr/bin/perl',
          '-e',
          'my $n = 256 << 20; my $id = shmget(0, $n, 0o1600) // die "shmget $!"; for (my $o = 0; $o < $n; $o += 1 << 20) { shmwrite($id, "x" x (1 << 20), $o, 1 << 20) or die "shmwrite $!" } print "done"',
        ]),
      ],
      60_000,
    );
    expect(run.stdout).not.toContain('done');
    expect(run.signal).toBe('SIGKILL');
    const events = await created.events();
    expect(events.find((event) => event.limit === 'memory')?.kind).toBe('oom_kill');
  });

  it('stops a fork bomb at pids.max, the harness can still start processes, and reports it', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 256 * MiB, pids: 64 });
    expect(readCgroupFile(created, 'pids.max')).toBe('64');
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    const bomb = runBounded(
      [...created.launchPrefix(), ...asUid(uid, ['/bin/sh', '-c', 'b() { b | b & }; b; sleep 30'])],
      60_000,
    );
    await waitFor(async () => (await created.events()).some((event) => event.limit === 'pids'), 20_000);
    let peak = 0;
    for (let sample = 0; sample < 20; sample += 1) {
      peak = Math.max(peak, (await created.pids()).length);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(peak).toBeLessThanOrEqual(64);
    // The harness (outside the group) is not limited.
    const outside = await runBounded(['/bin/echo', 'still here'], 10_000);
    expect(outside.stdout.trim()).toBe('still here');
    const kill = await created.killAll();
    expect(kill.mechanism).toBe(created.backend === 'cgroup-v2' ? 'cgroup.kill' : 'freeze-kill-thaw');
    await waitFor(async () => (await created.pids()).length === 0, 10_000);
    await bomb;
    const events = await created.events();
    const pids = events.find((event) => event.limit === 'pids')!;
    expect(pids).toMatchObject({ kind: 'max', limitValue: 64, source: 'pids.events:max' });
    expect(pids.count).toBeGreaterThan(0);
    expect(toMisbehavior(pids).code).toBe('PIDS_LIMIT');
  });

  it('killAll({ holdFrozen }) leaves killed v1 members frozen with SIGKILL pending until thaw()', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 128 * MiB, pids: 64 });
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    const sleepers = runBounded(
      [...created.launchPrefix(), ...asUid(uid, ['/bin/sh', '-c', 'sleep 60 & sleep 60 & sleep 60 & wait'])],
      60_000,
    );
    await waitFor(async () => (await created.pids()).length >= 4, 10_000);
    const members = await created.pids();
    const kill = await created.killAll({ holdFrozen: true });
    if (created.backend === 'cgroup-v2') {
      // cgroup.kill needs no freeze, and a v2 frozen task exits when killed: nothing to hold.
      expect(kill.hold).toBeUndefined();
    } else {
      expect(kill).toMatchObject({ mechanism: 'freeze-kill-thaw', signalled: members.length });
      expect(kill.hold?.members).toEqual(members);
      expect(readCgroupFile(created, 'freezer.state')).toBe('FROZEN');
      // Still there, every one with SIGKILL (bit 9) pending, none able to run.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await created.pids()).toEqual(members);
      for (const pid of members) {
        const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
        const pending = [/^SigPnd:\s*(\S+)/m, /^ShdPnd:\s*(\S+)/m].map((field) =>
          BigInt(`0x${field.exec(status)?.[1] ?? '0'}`),
        );
        expect(pending.some((mask) => (mask & (1n << 8n)) !== 0n)).toBe(true);
      }
      kill.hold!.thaw();
      kill.hold!.thaw(); // idempotent
      expect(readCgroupFile(created, 'freezer.state')).toBe('THAWED');
    }
    await waitFor(async () => (await created.pids()).length === 0, 10_000);
    expect((await sleepers).signal).toBe('SIGKILL');
  });

  // The v1 freezer is a controller of its own: a member can be in the pids group and not in it.
  it.runIf(hierarchy?.version === 1)(
    'killAll({ holdFrozen }) holds nothing when a member sits outside the frozen group',
    async () => {
      const created = await group({ name: uniqueName(), memoryBytes: 128 * MiB, pids: 64 });
      const freezerDir = created.dirs.find((dir) => fs.existsSync(path.join(dir, 'freezer.state')));
      const otherDir = created.dirs.find((dir) => !fs.existsSync(path.join(dir, 'freezer.state')));
      expect(freezerDir).toBeDefined();
      expect(otherDir).toBeDefined();
      const uid = testUid();
      cleanups.push(() => killUid(uid));
      const sleepers = runBounded(
        [...created.launchPrefix(), ...asUid(uid, ['/bin/sh', '-c', 'sleep 60 & wait'])],
        60_000,
      );
      await waitFor(async () => (await created.pids()).length >= 2, 10_000);
      // A root write moves one member out of the freezer group alone: frozen, the rest could not
      // run, but that one still could, so the group is thawed at once.
      const [moved] = fs
        .readFileSync(path.join(freezerDir!, 'cgroup.procs'), 'utf8')
        .split('\n')
        .filter(Boolean);
      const freezerRoot = path.dirname(freezerDir!);
      fs.writeFileSync(path.join(freezerRoot, 'cgroup.procs'), moved!);
      const kill = await created.killAll({ holdFrozen: true });
      expect(kill.hold).toBeUndefined();
      expect(kill.signalled).toBeGreaterThanOrEqual(2);
      expect(readCgroupFile(created, 'freezer.state')).toBe('THAWED');
      await waitFor(async () => (await created.pids()).length === 0, 10_000);
      expect((await sleepers).signal).toBe('SIGKILL');
    },
  );

  it('killAll kills a SIGSTOPped member and a fork-and-die relay alike', async () => {
    const created = await group({ name: uniqueName(), memoryBytes: 128 * MiB, pids: 128 });
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    const relay = runBounded(
      [
        ...created.launchPrefix(),
        ...asUid(uid, [
          '/bin/sh',
          '-c',
          '(sleep 60 & kill -STOP $!) ; r() { (r &) ; sleep 0.01; }; while :; do r; sleep 0.01; done',
        ]),
      ],
      60_000,
    );
    await waitFor(async () => (await created.pids()).length >= 3, 10_000);
    await created.killAll();
    await waitFor(async () => (await created.pids()).length === 0, 10_000);
    expect((await relay).signal).toBe('SIGKILL');
  });
});
