// The cgroup v2 backend at file level. This project's machines mount cgroup v2 WITHOUT
// controllers (memory and pids are on v1), so v2 cannot be exercised against the real kernel
// here: these tests run the real backend code against a FAKE cgroupfs tree
// (test/fake-cgroupfs.ts) that emulates the kernel rules the backend relies on.
// Where the host has v2 controllers, group.integration.test.ts runs the same code for real.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GiB, MiB } from '@karotte/base';
import type { CgroupHierarchy } from './cgroup-detect.js';
import { createGroupIn, groupOptionsSchema } from './group.js';
import type { LimitGroup } from './group.js';
import { FakeCgroupFs } from '../test/fake-cgroupfs.js';
import { LimitsError } from './errors.js';

const binaries = { sh: '/bin/sh', prlimit: '/usr/bin/prlimit' };
let work = '';
let fake: FakeCgroupFs;
let hierarchy: Extract<CgroupHierarchy, { version: 2 }>;
let stateDir = '';
const harnessPid = 424242;
const siblingPid = 434343;

function options(extra: Record<string, unknown> = {}) {
  return groupOptionsSchema.parse({ stateDir, hierarchy, memoryBytes: 64 * MiB, pids: 64, ...extra });
}

async function create(extra: Record<string, unknown> = {}, io: FakeCgroupFs = fake): Promise<LimitGroup> {
  return createGroupIn({ io, binaries }, options(extra));
}

beforeEach(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-fakecg-'));
  stateDir = path.join(work, 'state');
  const root = path.join(work, 'cgroup2');
  fake = new FakeCgroupFs(root, { rootControllers: ['cpu', 'memory', 'pids'] });
  // The harness runs in its own delegated group with a sibling process, as under systemd.
  fs.writeFileSync(path.join(root, 'cgroup.subtree_control'), 'cpu memory pids');
  const base = path.join(root, 'service');
  fake.seedGroup(base, [harnessPid, siblingPid]);
  hierarchy = { version: 2, mountPoint: root, base, harnessLeaf: path.join(base, 'karotte-harness') };
});

afterEach(() => {
  fs.rmSync(work, { recursive: true, force: true });
});

describe('cgroup v2 backend (fake cgroupfs: this host has no v2 controllers)', () => {
  it('recheck() reads memory.max, memory.swap.max, memory.oom.group and pids.max back again', async () => {
    const group = await create({ name: 'karotte-test-v2-recheck' });
    expect(await group.recheck()).toEqual([]);
    const dir = path.join(hierarchy.base, 'karotte-test-v2-recheck');
    fake.write(path.join(dir, 'memory.oom.group'), '0');
    fake.write(path.join(dir, 'pids.max'), 'max');
    expect(await group.recheck()).toEqual([
      `${dir}/memory.oom.group reads 0, not 1`,
      `${dir}/pids.max reads max, not 64`,
    ]);
  });

  it('the fake enforces the no-internal-processes rule the delegation order exists for', () => {
    expect(() => {
      fake.write(path.join(hierarchy.base, 'cgroup.subtree_control'), '+memory');
    }).toThrow(/EBUSY/);
  });

  it('moves the harness into a leaf BEFORE enabling controllers below it, then writes every limit and reads it back', async () => {
    const group = await create({ name: 'karotte-test-v2-1', cpuWeight: 300 });
    const ops = fake.mutations();
    const at = (op: string): number => {
      const index = ops.indexOf(op);
      expect(index, `${op} in\n${ops.join('\n')}`).toBeGreaterThanOrEqual(0);
      return index;
    };
    const leaf = at('mkdir service/karotte-harness');
    const moveHarness = at(`write service/karotte-harness/cgroup.procs ${harnessPid}`);
    const moveSibling = at(`write service/karotte-harness/cgroup.procs ${siblingPid}`);
    const delegate = at('write service/cgroup.subtree_control +memory +pids +cpu');
    const mkdir = at('mkdir service/karotte-test-v2-1');
    const memoryMax = at(`write service/karotte-test-v2-1/memory.max ${64 * MiB}`);
    const swap = at('write service/karotte-test-v2-1/memory.swap.max 0');
    const oomGroup = at('write service/karotte-test-v2-1/memory.oom.group 1');
    const pidsMax = at('write service/karotte-test-v2-1/pids.max 64');
    const cpu = at('write service/karotte-test-v2-1/cpu.weight 300');
    expect(leaf).toBeLessThan(moveHarness);
    expect(Math.max(moveHarness, moveSibling)).toBeLessThan(delegate);
    expect(delegate).toBeLessThan(mkdir);
    expect([mkdir, memoryMax, swap, oomGroup, pidsMax, cpu]).toEqual(
      [...[mkdir, memoryMax, swap, oomGroup, pidsMax, cpu]].sort((a, b) => a - b),
    );
    // Every value written was read back.
    for (const file of ['memory.max', 'memory.swap.max', 'memory.oom.group', 'pids.max', 'cpu.weight']) {
      const write = ops.findIndex((op) => op.startsWith(`write service/karotte-test-v2-1/${file} `));
      const readBack = fake.log.findIndex(
        (op, index) =>
          index > fake.log.indexOf(ops[write]!) && op === `read service/karotte-test-v2-1/${file}`,
      );
      expect(readBack, file).toBeGreaterThan(0);
    }
    expect(group.backend).toBe('cgroup-v2');
    expect(group.limits).toEqual({
      memoryBytes: 64 * MiB,
      pids: 64,
      cpuWeight: 300,
      swap: 'limited_to_zero',
      tcpMemoryBytes: null,
    });
    expect(group.contracts.memory.contract).toBe('prevented');
    expect(group.contracts.cpu_weight.contract).toBe('prevented');
    expect(fs.readFileSync(path.join(hierarchy.base, 'cgroup.procs'), 'utf8')).toBe('');
    // The launch prefix joins the one v2 group.
    const prefix = group.launchPrefix();
    expect(prefix.filter((arg) => arg.endsWith('cgroup.procs'))).toEqual([
      path.join(hierarchy.base, 'karotte-test-v2-1', 'cgroup.procs'),
    ]);
  });

  it('a second group reuses the delegation: no second move, no second subtree write', async () => {
    await create({ name: 'karotte-test-v2-a' });
    const before = fake.mutations().length;
    await create({ name: 'karotte-test-v2-b' });
    const ops = fake.mutations().slice(before);
    expect(ops.some((op) => op.includes('karotte-harness'))).toBe(false);
    expect(ops.some((op) => op.includes('subtree_control'))).toBe(false);
    expect(ops[0]).toBe('mkdir service/karotte-test-v2-b');
  });

  it('rounds memory.max to the page size and accepts the rounded value', async () => {
    const group = await create({ name: 'karotte-test-v2-round', memoryBytes: 64 * MiB + 100 });
    expect(group.limits.memoryBytes).toBe(64 * MiB);
  });

  for (const file of ['memory.max', 'memory.swap.max', 'memory.oom.group', 'pids.max', 'cpu.weight']) {
    it(`fails closed when a write to ${file} does not take, and leaves nothing behind`, async () => {
      fake.ignoreWrites.add(file);
      const error = await create({ name: 'karotte-test-v2-ignored', cpuWeight: 300 }).catch(
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(LimitsError);
      expect(error).toMatchObject({
        code: 'LIMIT_NOT_APPLIED',
        path: path.join(hierarchy.base, 'karotte-test-v2-ignored', file),
      });
      expect((error as LimitsError).message).toContain('read back');
      expect(fs.existsSync(path.join(hierarchy.base, 'karotte-test-v2-ignored'))).toBe(false);
      expect(fs.readdirSync(path.join(stateDir, 'groups'))).toEqual([]);
    });
  }

  it('fails closed when the kernel refuses a write', async () => {
    fake.refuseWrites.set('pids.max', 'EINVAL');
    await expect(create({ name: 'karotte-test-v2-refused' })).rejects.toMatchObject({
      code: 'LIMIT_NOT_APPLIED',
      message: expect.stringContaining('EINVAL') as unknown,
    });
    expect(fs.existsSync(path.join(hierarchy.base, 'karotte-test-v2-refused'))).toBe(false);
  });

  it('fails closed when delegation does not take', async () => {
    fake.ignoreWrites.add('cgroup.subtree_control');
    await expect(create({ name: 'karotte-test-v2-nodeleg' })).rejects.toMatchObject({
      code: 'LIMIT_NOT_APPLIED',
      path: path.join(hierarchy.base, 'cgroup.subtree_control'),
    });
  });

  it('refuses without the pids controller; an explicit cpuWeight without cpu; reports a missing cpu otherwise', async () => {
    const root = path.join(work, 'nopids');
    const noPids = new FakeCgroupFs(root, { rootControllers: ['memory'] });
    hierarchy = { version: 2, mountPoint: root, base: root, harnessLeaf: null };
    await expect(create({ name: 'karotte-test-v2-np' }, noPids)).rejects.toMatchObject({
      code: 'CGROUPS_UNAVAILABLE',
    });
    const root2 = path.join(work, 'nocpu');
    const noCpu = new FakeCgroupFs(root2, { rootControllers: ['memory', 'pids'] });
    hierarchy = { version: 2, mountPoint: root2, base: root2, harnessLeaf: null };
    await expect(create({ name: 'karotte-test-v2-nc', cpuWeight: 200 }, noCpu)).rejects.toMatchObject({
      code: 'CGROUPS_UNAVAILABLE',
    });
    const group = await create({ name: 'karotte-test-v2-nc2' }, noCpu);
    expect(group.limits.cpuWeight).toBeNull();
    expect(group.contracts.cpu_weight.contract).toBe('not_supported');
    // At the hierarchy root there is no leaf to move into: processes may stay in the root.
    expect(noCpu.mutations().some((op) => op.includes('karotte-harness'))).toBe(false);
  });

  it('reports OOM kills and fork refusals from memory.events and pids.events, diffed since creation', async () => {
    const dir = path.join(hierarchy.base, 'karotte-test-v2-ev');
    const group = await create({ name: 'karotte-test-v2-ev' });
    expect(await group.events()).toEqual([]);
    fake.set(path.join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n');
    fake.set(path.join(dir, 'memory.peak'), String(64 * MiB));
    fake.set(path.join(dir, 'pids.events'), 'max 5\n');
    fake.set(path.join(dir, 'pids.peak'), '64');
    const events = await group.events();
    expect(events).toEqual([
      {
        limit: 'memory',
        kind: 'oom_kill',
        count: 2,
        atMs: expect.any(Number) as unknown,
        observed: 64 * MiB,
        limitValue: 64 * MiB,
        source: 'memory.events:oom_kill',
      },
      {
        limit: 'pids',
        kind: 'max',
        count: 5,
        atMs: expect.any(Number) as unknown,
        observed: 64,
        limitValue: 64,
        source: 'pids.events:max',
      },
    ]);
    expect((await group.usage()).memoryLimitHits).toBe(9);
    expect(JSON.parse(JSON.stringify(events))).toEqual(events);
  });

  it('killAll writes cgroup.kill; without it (Linux < 5.14) it freezes, kills and thaws', async () => {
    const group = await create({ name: 'karotte-test-v2-kill' });
    fake.set(path.join(hierarchy.base, 'karotte-test-v2-kill', 'cgroup.procs'), '');
    expect(await group.killAll()).toEqual({ mechanism: 'cgroup.kill', signalled: 0 });
    expect(fake.mutations()).toContain('write service/karotte-test-v2-kill/cgroup.kill 1');

    const root = path.join(work, 'old');
    const old = new FakeCgroupFs(root, { rootControllers: ['memory', 'pids'], omitFiles: ['cgroup.kill'] });
    hierarchy = { version: 2, mountPoint: root, base: root, harnessLeaf: null };
    const oldGroup = await create({ name: 'karotte-test-v2-old' }, old);
    expect(await oldGroup.killAll()).toEqual({ mechanism: 'freeze-kill-thaw', signalled: 0 });
    const ops = old.mutations();
    expect(ops.indexOf('write karotte-test-v2-old/cgroup.freeze 1')).toBeLessThan(
      ops.indexOf('write karotte-test-v2-old/cgroup.freeze 0'),
    );
  });

  it('remove() empties and removes the group and its record, keeps the harness leaf, and is idempotent', async () => {
    const group = await create({ name: 'karotte-test-v2-rm' });
    const removal = await group.remove();
    expect(removal.events).toEqual([]);
    expect(fs.existsSync(path.join(hierarchy.base, 'karotte-test-v2-rm'))).toBe(false);
    expect(fs.existsSync(hierarchy.harnessLeaf!)).toBe(true);
    expect(fs.readdirSync(path.join(stateDir, 'groups'))).toEqual([]);
    await expect(group.remove()).resolves.toBe(removal);
    expect(() => group.launchPrefix()).toThrow(expect.objectContaining({ code: 'REMOVED' }) as unknown);
  });

  it('derives the default memory from the tightest memory.max above, minus the 1 GiB headroom', async () => {
    fake.set(path.join(hierarchy.base, 'memory.max'), String(3 * GiB));
    const group = await createGroupIn(
      { io: fake, binaries },
      groupOptionsSchema.parse({ stateDir, hierarchy, name: 'karotte-test-v2-mem' }),
    );
    expect(group.limits.memoryBytes).toBe(2 * GiB);
    fake.set(path.join(hierarchy.base, 'memory.max'), String(GiB + MiB));
    await expect(
      createGroupIn(
        { io: fake, binaries },
        groupOptionsSchema.parse({ stateDir, hierarchy, name: 'karotte-test-v2-mem2' }),
      ),
    ).rejects.toMatchObject({ code: 'INSUFFICIENT_MEMORY' });
  });
});
