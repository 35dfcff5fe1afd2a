// Blame for an OOM kill, on this host's real cgroups. A "global" OOM is simulated with a parent
// group whose memory limit is below the sum of two episode groups' limits (never on the bare
// host: only the parent's own processes can be chosen). An honest episode that used little is
// killed by the parent's OOM and must not be charged; a hog that reaches its own limit is.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { asUid, killUid, tempDir, testUid, waitFor } from '../../../test/support/index.js';
import { detectCgroups } from './cgroup-detect.js';
import type { CgroupHierarchy } from './cgroup-detect.js';
import { LimitsError } from './errors.js';
import { hostFaultOf, isHostFault, toMisbehavior } from './events.js';
import { createGroup } from './group.js';
import type { LimitGroup } from './group.js';

const cleanups: (() => Promise<void> | void)[] = [];
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

const detected = detectCgroups().hierarchy;
const PARENT_BYTES = 160 * MiB;
const EPISODE_BYTES = 128 * MiB;

/** Allocates (and touches) $ARGV[0] MiB, says `ready`, and holds it. */
const HOLD = '$| = 1; my $x = "k" x ($ARGV[0] * 1048576); print "ready\\n"; sleep 120;';

/**
 * A parent group for two episodes: its memory limit (160 MiB) is below the sum of theirs
 * (2 × 128 MiB), as the default limits overcommit a host. Written and read back first.
 */
function parentHierarchy(name: string): CgroupHierarchy {
  if (detected === null) throw new Error('no usable cgroup hierarchy on this host');
  const made: string[] = [];
  cleanups.push(() => {
    for (const dir of made.reverse()) fs.rmdirSync(dir);
  });
  const mkdir = (dir: string): string => {
    fs.mkdirSync(dir);
    made.push(dir);
    return dir;
  };
  const write = (file: string, value: string): void => {
    fs.writeFileSync(file, value);
    expect(fs.readFileSync(file, 'utf8').trim(), file).toBe(value);
  };
  if (detected.version === 1) {
    const memory = mkdir(path.join(detected.memory, name));
    write(path.join(memory, 'memory.limit_in_bytes'), String(PARENT_BYTES));
    if (fs.existsSync(path.join(memory, 'memory.memsw.limit_in_bytes'))) {
      write(path.join(memory, 'memory.memsw.limit_in_bytes'), String(PARENT_BYTES));
    }
    return {
      version: 1,
      memory,
      pids: mkdir(path.join(detected.pids, name)),
      freezer: mkdir(path.join(detected.freezer, name)),
      cpu: null,
    };
  }
  const base = mkdir(path.join(detected.base, name));
  write(path.join(base, 'memory.max'), String(PARENT_BYTES));
  if (fs.existsSync(path.join(base, 'memory.swap.max'))) write(path.join(base, 'memory.swap.max'), '0');
  return { version: 2, mountPoint: detected.mountPoint, base, harnessLeaf: null };
}

async function episodeGroup(hierarchy: CgroupHierarchy, name: string): Promise<LimitGroup> {
  const state = tempDir('limits-state');
  cleanups.push(state.cleanup);
  const group = await createGroup({
    name,
    hierarchy,
    stateDir: state.dir,
    memoryBytes: EPISODE_BYTES,
    pids: 32,
    eventPollMs: 0,
  });
  cleanups.push(async () => {
    await group.remove();
  });
  expect(group.limits.memoryBytes).toBe(EPISODE_BYTES);
  return group;
}

interface Holder {
  readonly child: ChildProcess;
  /** Resolves true once it holds its memory, false when it died first. */
  readonly ready: Promise<boolean>;
}

/** A process of `uid` in `group` holding `mib` MiB (bounded: killed by the test's cleanup). */
function hold(group: LimitGroup, uid: number, mib: number): Holder {
  const prefix = group.launchPrefix();
  const child = spawn(
    prefix[0]!,
    [...prefix.slice(1), ...asUid(uid, ['/usr/bin/perl', '-e', HOLD, String(mib)])],
    {
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  cleanups.push(() => {
    child.kill('SIGKILL');
  });
  const ready = new Promise<boolean>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString('utf8').includes('ready')) resolve(true);
    });
    child.once('exit', () => {
      resolve(false);
    });
  });
  return { child, ready };
}

/** Wait (bounded) for a holder to be ready or dead. */
async function settled(holder: Holder): Promise<boolean> {
  return Promise.race([
    holder.ready,
    new Promise<boolean>((_, reject) =>
      setTimeout(() => {
        reject(new Error('a holder neither got its memory nor died within 30 s'));
      }, 30_000),
    ),
  ]);
}

describe('an OOM kill outside the group is not charged to the episode', () => {
  it('the honest episode killed by its parent’s OOM is a host fault; the hog at its own limit is charged', async () => {
    const tag = `karotte-test-blame-${process.pid}-${Date.now() % 100000}`;
    const hierarchy = parentHierarchy(`${tag}-parent`);
    const honest = await episodeGroup(hierarchy, `${tag}-honest`);
    const hog = await episodeGroup(hierarchy, `${tag}-hog`);
    const honestUid = testUid();
    const hogUid = testUid();
    cleanups.push(() => killUid(honestUid));
    cleanups.push(() => killUid(hogUid));

    // The honest episode: one 48 MiB process, the largest of all (the OOM killer's choice:
    // every student has oom_score_adj 1000, and then the biggest goes first).
    const student = hold(honest, honestUid, 48);
    expect(await settled(student)).toBe(true);
    // The hog: 24 MiB processes, each smaller than the honest one, until the parent (160 MiB)
    // runs out. It stays within its own 128 MiB; the honest episode is the one killed.
    for (let i = 0; i < 8 && student.child.exitCode === null && student.child.signalCode === null; i += 1) {
      const piece = hold(hog, hogUid, 24);
      if (!(await settled(piece))) break;
    }
    await waitFor(() => student.child.signalCode !== null || student.child.exitCode !== null, 10_000);
    expect(student.child.signalCode).toBe('SIGKILL');
    const honestUsage = await honest.usage();
    expect(honestUsage.memoryPeakBytes ?? 0).toBeLessThan(EPISODE_BYTES / 2);

    const honestEvents = await honest.events();
    expect(honestEvents.map((event) => event.kind)).toEqual(['host_oom']);
    expect(honestEvents[0]).toMatchObject({ limit: 'memory', count: 1, limitValue: EPISODE_BYTES });
    expect(isHostFault(honestEvents[0]!)).toBe(true);
    const fault = hostFaultOf(honestEvents);
    expect(LimitsError.isInstance(fault)).toBe(true);
    expect(fault).toMatchObject({ code: 'HOST_OUT_OF_MEMORY', kind: 'system' });
    expect(() => toMisbehavior(honestEvents[0]!)).toThrow(/not the student/);

    // The hog goes on until it reaches its own limit: the kernel kills one of its own.
    const before = (await hog.pids()).length;
    let killedOwn = false;
    for (let i = 0; i < 8 && !killedOwn; i += 1) {
      const piece = hold(hog, hogUid, 24);
      const got = await settled(piece);
      killedOwn = !got || (await hog.pids()).length < before + i + 1;
    }
    expect(killedOwn).toBe(true);
    const hogEvents = await hog.events();
    expect(hogEvents.map((event) => event.kind)).toEqual(['oom_kill']);
    expect(hostFaultOf(hogEvents)).toBeUndefined();
    expect(toMisbehavior(hogEvents[0]!).code).toBe('MEMORY_LIMIT');
  });
});
