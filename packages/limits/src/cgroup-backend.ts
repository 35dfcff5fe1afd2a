// The two cgroup backends. Each creates one episode group, writes every limit and reads it
// back (a write that did not take fails closed), reads the limit-hit counters, and kills
// every member atomically with respect to fork.
import path from 'node:path';
import { isErrno, killPid } from '@karotte/base';
import type { CgroupHierarchy } from './cgroup-detect.js';
import type { CgroupIo } from './cgroup-io.js';
import {
  acceptRoundedBytes,
  readKeyed,
  readNumber,
  readPidsRecursive,
  rmdirRecursive,
  writeChecked,
} from './cgroup-io.js';
import { LimitsError } from './errors.js';
import type { FrozenHold, GroupKillResult } from './group-types.js';
import { pageSize, socketAccountingDisabled, swapActive } from './proc.js';

/** What a backend was asked to apply. */
export interface WantedLimits {
  readonly memoryBytes: number;
  readonly pids: number;
  /** Requested CPU weight; `explicit` says whether its absence must fail. */
  readonly cpuWeight: number;
  readonly cpuWeightExplicit: boolean;
}

/** What was read back after writing. */
export interface AppliedLimits {
  readonly memoryBytes: number;
  readonly pids: number;
  /** Null when the cpu controller is not available (then `cpuNote` says why). */
  readonly cpuWeight: number | null;
  readonly swap: 'limited_to_zero' | 'memsw_equals_memory' | 'swappiness_zero' | 'no_swap_on_host';
  /**
   * v1: the group's own limit on TCP buffer memory (`memory.kmem.tcp.limit_in_bytes`, read
   * back), which v1 charges outside `memory.limit_in_bytes`. Null on v2, where socket buffers
   * are charged to `memory.max` like any other memory.
   */
  readonly tcpMemoryBytes: number | null;
}

/**
 * The share of the memory limit a v1 group may hold in TCP buffers on top of it. v1 charges
 * socket buffers only to `memory.kmem.tcp`, never to `memory.limit_in_bytes`, and only once
 * that limit is written: without it a student's loopback flood pins gigabytes no limit sees.
 * A quarter keeps an episode within 1.25 × its memory limit and is far above honest use (a
 * busy loopback connection holds a few MiB); at the limit the kernel shrinks the buffers and
 * drops, so TCP slows down and keeps working.
 */
const V1_TCP_MEMORY_SHARE = 0.25;

/** Refuse a host where the kernel charges no socket memory to any cgroup. */
function assertSocketAccounting(version: 1 | 2): void {
  if (socketAccountingDisabled()) {
    throw new LimitsError(
      'LIMIT_NOT_APPLIED',
      `the kernel was booted with cgroup.memory=nosocket: TCP buffers are charged to no cgroup ${version === 1 ? '(memory.kmem.tcp.limit_in_bytes would enforce nothing)' : '(memory.max would not count them)'}`,
      { path: '/proc/cmdline' },
    );
  }
}

/** Raw counters of a group (cumulative since the group was created). */
export interface GroupCounters {
  /** Processes of the group the kernel's OOM killer killed, for any OOM (its own or outside it). */
  readonly oomKills: number;
  /**
   * v2 `memory.events` `oom`: times the group's own limit was reached and an allocation was
   * about to fail (an OOM of this group, not of the host or an ancestor). Null on v1.
   */
  readonly ownOoms: number | null;
  /** Times usage hit the group's own limit (v2 `memory.events` `max`; v1 `memory.failcnt`). */
  readonly memoryMaxHits: number;
  /** v1 `memory.memsw.failcnt` (the memory+swap limit, charged first, hit); 0 on v2 or without memsw. */
  readonly memswMaxHits: number;
  readonly pidsMaxHits: number;
  readonly memoryBytes: number;
  readonly memoryPeakBytes: number | null;
  readonly pids: number;
  readonly pidsPeak: number | null;
}

/** One created group, version-independent. */
export interface CgroupBackend {
  readonly version: 1 | 2;
  /** Every directory created, one per hierarchy (v1) or one (v2). */
  readonly dirs: readonly string[];
  /** The cgroup.procs files a launched process writes its pid to. */
  readonly procsFiles: readonly string[];
  readonly applied: AppliedLimits;
  /** Why the CPU weight is not applied, when it is not. */
  readonly cpuNote: string | null;
  counters(): GroupCounters;
  /**
   * Read every written limit back again: one sentence per file that no longer holds what was
   * read back at creation (or cannot be read). Empty: the limits stand.
   */
  recheck(): string[];
}

/** Each file must still read `value` (trimmed). */
function recheckFiles(io: CgroupIo, expected: readonly (readonly [string, string])[]): string[] {
  const out: string[] = [];
  for (const [file, value] of expected) {
    let now: string;
    try {
      now = io.read(file).trim();
    } catch (error) {
      out.push(`${file} cannot be read: ${error instanceof Error ? error.message : String(error)}`);
      continue;
    }
    if (now !== value) out.push(`${file} reads ${now.slice(0, 40)}, not ${value}`);
  }
  return out;
}

/** Parent directories of the groups (for naming checks and recovery). */
export function groupDirs(hierarchy: CgroupHierarchy, name: string): string[] {
  if (hierarchy.version === 2) return [path.join(hierarchy.base, name)];
  const bases = [hierarchy.memory, hierarchy.pids, hierarchy.freezer, hierarchy.cpu].filter(
    (base): base is string => base !== null,
  );
  // Co-mounted controllers (cpu,cpuacct; or memory,pids on some hosts) share one directory.
  return [...new Set(bases.map((base) => path.join(base, name)))];
}

function makeDirs(io: CgroupIo, dirs: readonly string[]): void {
  const made: string[] = [];
  try {
    for (const dir of dirs) {
      io.mkdir(dir);
      made.push(dir);
    }
  } catch (error) {
    for (const dir of made.reverse()) {
      try {
        io.rmdir(dir);
      } catch {
        // best effort rollback
      }
    }
    if (isErrno(error, 'EEXIST')) {
      throw new LimitsError('GROUP_EXISTS', `a cgroup named ${path.basename(dirs[0] ?? '')} already exists`, {
        path: dirs[made.length] ?? '',
        cause: error,
      });
    }
    throw new LimitsError(
      'CGROUPS_UNAVAILABLE',
      `cannot create cgroup ${dirs[made.length] ?? ''}: ${isErrno(error) ? error.code : String(error)}`,
      { path: dirs[made.length] ?? '', cause: error },
    );
  }
}

/** Remove the created directories after a failed setup, then rethrow. */
function rollback(io: CgroupIo, dirs: readonly string[], error: unknown): never {
  for (const dir of dirs) {
    try {
      rmdirRecursive(io, dir);
    } catch {
      // best effort: the owner record stays and recovery retries
    }
  }
  throw error;
}

/** Map a CPU weight (1–10000, 100 = default) to v1 cpu.shares (2–262144, 1024 = default). */
function weightToShares(weight: number): number {
  return Math.min(262_144, Math.max(2, Math.round((weight * 1024) / 100)));
}

/** Create a v1 group in every hierarchy and apply the limits. */
export function createV1(
  io: CgroupIo,
  hierarchy: Extract<CgroupHierarchy, { version: 1 }>,
  name: string,
  wanted: WantedLimits,
): CgroupBackend {
  const dirs = groupDirs(hierarchy, name);
  const memoryDir = path.join(hierarchy.memory, name);
  const pidsDir = path.join(hierarchy.pids, name);
  const cpuDir = hierarchy.cpu === null ? null : path.join(hierarchy.cpu, name);
  if (wanted.cpuWeightExplicit && cpuDir === null) {
    throw new LimitsError(
      'CGROUPS_UNAVAILABLE',
      'cpuWeight was asked for but the v1 cpu controller is not mounted',
    );
  }
  assertSocketAccounting(1);
  makeDirs(io, dirs);
  try {
    // The memory limit first, then memsw (which must stay >= the memory limit).
    const memory = Number(
      writeChecked(
        io,
        `${memoryDir}/memory.limit_in_bytes`,
        String(wanted.memoryBytes),
        acceptRoundedBytes(wanted.memoryBytes),
      ),
    );
    let swap: AppliedLimits['swap'];
    if (io.exists(`${memoryDir}/memory.memsw.limit_in_bytes`)) {
      writeChecked(io, `${memoryDir}/memory.memsw.limit_in_bytes`, String(memory));
      swap = 'memsw_equals_memory';
    } else if (swapActive()) {
      // Without memsw accounting the group could page out instead of hitting its limit.
      writeChecked(io, `${memoryDir}/memory.swappiness`, '0');
      swap = 'swappiness_zero';
    } else {
      swap = 'no_swap_on_host';
    }
    // TCP buffers: charged on v1 only to memory.kmem.tcp, and only once its limit is written
    // (sockets are tied to the group when created: the group is still empty here).
    const tcpFile = `${memoryDir}/memory.kmem.tcp.limit_in_bytes`;
    if (!io.exists(tcpFile)) {
      throw new LimitsError(
        'LIMIT_NOT_APPLIED',
        `${tcpFile} is missing: TCP buffers would be charged to no limit`,
        { path: tcpFile },
      );
    }
    const page = pageSize();
    const tcpWanted = Math.max(page, Math.floor((memory * V1_TCP_MEMORY_SHARE) / page) * page);
    const tcpMemoryBytes = Number(
      writeChecked(io, tcpFile, String(tcpWanted), acceptRoundedBytes(tcpWanted)),
    );
    const oomControl = readKeyed(io, `${memoryDir}/memory.oom_control`);
    if (oomControl.get('oom_kill_disable') === 1) {
      throw new LimitsError('LIMIT_NOT_APPLIED', `${memoryDir}: the OOM killer is disabled for this group`, {
        path: `${memoryDir}/memory.oom_control`,
      });
    }
    writeChecked(io, `${pidsDir}/pids.max`, String(wanted.pids));
    let cpuWeight: number | null = null;
    let cpuNote: string | null = 'the v1 cpu controller is not mounted';
    if (cpuDir !== null) {
      writeChecked(io, `${cpuDir}/cpu.shares`, String(weightToShares(wanted.cpuWeight)));
      cpuWeight = wanted.cpuWeight;
      cpuNote = null;
    }
    const expected: [string, string][] = [
      [`${memoryDir}/memory.limit_in_bytes`, String(memory)],
      [`${memoryDir}/memory.kmem.tcp.limit_in_bytes`, String(tcpMemoryBytes)],
      [`${pidsDir}/pids.max`, String(wanted.pids)],
    ];
    if (swap === 'memsw_equals_memory')
      expected.push([`${memoryDir}/memory.memsw.limit_in_bytes`, String(memory)]);
    if (swap === 'swappiness_zero') expected.push([`${memoryDir}/memory.swappiness`, '0']);
    return {
      version: 1,
      dirs,
      procsFiles: dirs.map((dir) => `${dir}/cgroup.procs`),
      applied: { memoryBytes: memory, pids: wanted.pids, cpuWeight, swap, tcpMemoryBytes },
      cpuNote,
      recheck: () => {
        const out = recheckFiles(io, expected);
        try {
          if (readKeyed(io, `${memoryDir}/memory.oom_control`).get('oom_kill_disable') === 1)
            out.push(`${memoryDir}: the OOM killer is disabled for this group`);
        } catch (error) {
          out.push(
            `${memoryDir}/memory.oom_control cannot be read: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
        return out;
      },
      counters: () => {
        const oom = readKeyed(io, `${memoryDir}/memory.oom_control`);
        const pidsEvents = readKeyed(io, `${pidsDir}/pids.events`);
        return {
          oomKills: oom.get('oom_kill') ?? 0,
          ownOoms: null,
          memoryMaxHits: readNumberOr(io, `${memoryDir}/memory.failcnt`, 0),
          memswMaxHits: readNumberOr(io, `${memoryDir}/memory.memsw.failcnt`, 0),
          pidsMaxHits: pidsEvents.get('max') ?? 0,
          memoryBytes: readNumberOr(io, `${memoryDir}/memory.usage_in_bytes`, 0),
          memoryPeakBytes: readNumberOr(io, `${memoryDir}/memory.max_usage_in_bytes`, null),
          pids: readNumberOr(io, `${pidsDir}/pids.current`, 0),
          pidsPeak: readNumberOr(io, `${pidsDir}/pids.peak`, null),
        };
      },
    };
  } catch (error) {
    return rollback(io, dirs, error);
  }
}

function readNumberOr<T extends number | null>(io: CgroupIo, file: string, fallback: T): number | T {
  try {
    const value = readNumber(io, file);
    return Number.isFinite(value) ? value : fallback;
  } catch {
    return fallback;
  }
}

/**
 * Prepare v2 delegation below `base`: move every process of `base` into the harness leaf
 * (a v2 group with processes cannot enable controllers for its children: the "no internal
 * processes" rule), then enable the controllers in `base/cgroup.subtree_control` and read
 * them back. Idempotent and safe to run concurrently.
 */
function ensureV2Delegation(
  io: CgroupIo,
  hierarchy: Extract<CgroupHierarchy, { version: 2 }>,
  controllers: readonly string[],
): void {
  const { base, harnessLeaf } = hierarchy;
  const subtreeFile = `${base}/cgroup.subtree_control`;
  const enabled = (): string[] => io.read(subtreeFile).trim().split(/\s+/).filter(Boolean);
  const missing = (): string[] => controllers.filter((controller) => !enabled().includes(controller));
  if (missing().length === 0) return;
  if (harnessLeaf !== null) {
    try {
      io.mkdir(harnessLeaf);
    } catch (error) {
      if (!isErrno(error, 'EEXIST')) {
        throw new LimitsError('CGROUPS_UNAVAILABLE', `cannot create the harness leaf ${harnessLeaf}`, {
          path: harnessLeaf,
          cause: error,
        });
      }
    }
  }
  let lastError: unknown;
  // A process may be born in `base` between the move and the write (EBUSY): move again.
  for (let attempt = 0; attempt < 5; attempt += 1) {
    if (harnessLeaf !== null) moveAllProcesses(io, base, harnessLeaf);
    try {
      io.write(
        subtreeFile,
        missing()
          .map((controller) => `+${controller}`)
          .join(' '),
      );
      lastError = undefined;
      break;
    } catch (error) {
      lastError = error;
      if (!isErrno(error, 'EBUSY')) break;
    }
  }
  const stillMissing = missing();
  if (lastError !== undefined || stillMissing.length > 0) {
    throw new LimitsError(
      'LIMIT_NOT_APPLIED',
      `cannot enable ${stillMissing.join(', ') || controllers.join(', ')} in ${subtreeFile}` +
        (isErrno(lastError) ? `: ${lastError.code}` : ''),
      { path: subtreeFile, wanted: controllers.join(' '), got: enabled().join(' '), cause: lastError },
    );
  }
}

/** Move every pid listed in `from/cgroup.procs` into `to` (one pid per write, as the kernel wants). */
function moveAllProcesses(io: CgroupIo, from: string, to: string): void {
  const pids = io
    .read(`${from}/cgroup.procs`)
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  for (const pid of pids) {
    try {
      io.write(`${to}/cgroup.procs`, pid);
    } catch (error) {
      // A process that exited since the listing is fine; anything else is not.
      if (!isErrno(error, 'ESRCH')) {
        throw new LimitsError('CGROUPS_UNAVAILABLE', `cannot move pid ${pid} into the harness leaf ${to}`, {
          path: `${to}/cgroup.procs`,
          cause: error,
        });
      }
    }
  }
}

/** Create a v2 group (after delegation) and apply the limits. */
export function createV2(
  io: CgroupIo,
  hierarchy: Extract<CgroupHierarchy, { version: 2 }>,
  name: string,
  wanted: WantedLimits,
): CgroupBackend {
  const available = io.read(`${hierarchy.base}/cgroup.controllers`).trim().split(/\s+/);
  for (const required of ['memory', 'pids']) {
    if (!available.includes(required)) {
      throw new LimitsError(
        'CGROUPS_UNAVAILABLE',
        `the v2 ${required} controller is not available at ${hierarchy.base}`,
        {
          path: `${hierarchy.base}/cgroup.controllers`,
        },
      );
    }
  }
  const cpuAvailable = available.includes('cpu');
  if (wanted.cpuWeightExplicit && !cpuAvailable) {
    throw new LimitsError(
      'CGROUPS_UNAVAILABLE',
      `cpuWeight was asked for but the v2 cpu controller is not available at ${hierarchy.base}`,
    );
  }
  assertSocketAccounting(2);
  ensureV2Delegation(io, hierarchy, cpuAvailable ? ['memory', 'pids', 'cpu'] : ['memory', 'pids']);
  const dir = path.join(hierarchy.base, name);
  makeDirs(io, [dir]);
  try {
    const memory = Number(
      writeChecked(
        io,
        `${dir}/memory.max`,
        String(wanted.memoryBytes),
        acceptRoundedBytes(wanted.memoryBytes),
      ),
    );
    let swap: AppliedLimits['swap'];
    if (io.exists(`${dir}/memory.swap.max`)) {
      // Without this the group pages out instead of being OOM-killed at its limit.
      writeChecked(io, `${dir}/memory.swap.max`, '0');
      swap = 'limited_to_zero';
    } else if (swapActive()) {
      throw new LimitsError(
        'LIMIT_NOT_APPLIED',
        `${dir}/memory.swap.max is missing (no swap accounting) while the host has swap: the memory limit would page out`,
        { path: `${dir}/memory.swap.max` },
      );
    } else {
      swap = 'no_swap_on_host';
    }
    // The whole group is OOM-killed together: no half-dead episode keeps running.
    writeChecked(io, `${dir}/memory.oom.group`, '1');
    writeChecked(io, `${dir}/pids.max`, String(wanted.pids));
    let cpuWeight: number | null = null;
    let cpuNote: string | null = `the v2 cpu controller is not available at ${hierarchy.base}`;
    if (cpuAvailable) {
      writeChecked(io, `${dir}/cpu.weight`, String(wanted.cpuWeight));
      cpuWeight = wanted.cpuWeight;
      cpuNote = null;
    }
    const expected: [string, string][] = [
      [`${dir}/memory.max`, String(memory)],
      [`${dir}/memory.oom.group`, '1'],
      [`${dir}/pids.max`, String(wanted.pids)],
    ];
    if (swap === 'limited_to_zero') expected.push([`${dir}/memory.swap.max`, '0']);
    return {
      version: 2,
      dirs: [dir],
      procsFiles: [`${dir}/cgroup.procs`],
      applied: { memoryBytes: memory, pids: wanted.pids, cpuWeight, swap, tcpMemoryBytes: null },
      cpuNote,
      recheck: () => recheckFiles(io, expected),
      counters: () => {
        const memoryEvents = readKeyed(io, `${dir}/memory.events`);
        const pidsEvents = readKeyed(io, `${dir}/pids.events`);
        return {
          oomKills: memoryEvents.get('oom_kill') ?? 0,
          ownOoms: memoryEvents.get('oom') ?? 0,
          memoryMaxHits: memoryEvents.get('max') ?? 0,
          memswMaxHits: 0,
          pidsMaxHits: pidsEvents.get('max') ?? 0,
          memoryBytes: readNumberOr(io, `${dir}/memory.current`, 0),
          memoryPeakBytes: readNumberOr(io, `${dir}/memory.peak`, null),
          pids: readNumberOr(io, `${dir}/pids.current`, 0),
          pidsPeak: readNumberOr(io, `${dir}/pids.peak`, null),
        };
      },
    };
  } catch (error) {
    return rollback(io, [dir], error);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Union of the pids of every directory (and their children). */
export function pidsOfDirs(io: CgroupIo, dirs: readonly string[]): number[] {
  const all = new Set<number>();
  for (const dir of dirs) for (const pid of readPidsRecursive(io, dir)) all.add(pid);
  return [...all].sort((a, b) => a - b);
}

/**
 * Kill every process in the group's directories, atomically with respect to fork:
 * - v2 with `cgroup.kill` (Linux 5.14+): one write, the kernel kills every member and descendant.
 * - otherwise freeze (v1 `freezer.state`, v2 `cgroup.freeze`), wait until frozen (bounded),
 *   list the members (none can fork while frozen), SIGKILL each, then thaw so the kernel
 *   can deliver the signals and the processes can die. With `holdFrozen` a v1 group whose
 *   freeze took, and which holds every member of every controller, is left frozen and the
 *   result carries the hold (a v1 frozen task stays frozen when killed; a v2 one does not, so
 *   v2 thaws at once).
 * Works from the directories alone, so recovery can kill a dead harness's groups too.
 */
export async function killDirs(
  io: CgroupIo,
  dirs: readonly string[],
  { freezeWaitMs = 1000, holdFrozen = false }: { freezeWaitMs?: number; holdFrozen?: boolean } = {},
): Promise<GroupKillResult> {
  const v2Kill = dirs.find((dir) => io.exists(`${dir}/cgroup.kill`));
  if (v2Kill !== undefined) {
    const before = pidsOfDirs(io, dirs).length;
    io.write(`${v2Kill}/cgroup.kill`, '1');
    return { mechanism: 'cgroup.kill', signalled: before };
  }
  const freezerV1 = dirs.find((dir) => io.exists(`${dir}/freezer.state`));
  const freezerV2 = dirs.find((dir) => io.exists(`${dir}/cgroup.freeze`));
  const freeze = (): void => {
    if (freezerV1 !== undefined) io.write(`${freezerV1}/freezer.state`, 'FROZEN');
    else if (freezerV2 !== undefined) io.write(`${freezerV2}/cgroup.freeze`, '1');
  };
  let thawed = false;
  const thaw = (): void => {
    if (thawed) return;
    thawed = true;
    if (freezerV1 !== undefined) io.write(`${freezerV1}/freezer.state`, 'THAWED');
    else if (freezerV2 !== undefined) io.write(`${freezerV2}/cgroup.freeze`, '0');
  };
  /** Frozen, or unreadable (then the kill goes ahead all the same); `strict` takes unreadable as not frozen. */
  const frozen = (strict = false): boolean => {
    try {
      if (freezerV1 !== undefined) return io.read(`${freezerV1}/freezer.state`).trim() === 'FROZEN';
      if (freezerV2 !== undefined) return readKeyed(io, `${freezerV2}/cgroup.events`).get('frozen') === 1;
    } catch {
      return !strict;
    }
    return !strict;
  };
  let signalled: number;
  let hold: FrozenHold | undefined;
  freeze();
  try {
    // A task in uninterruptible sleep can keep the group FREEZING; the kill below still
    // lands on every listed member, and the caller's loop repeats until the group is empty.
    const deadline = Date.now() + freezeWaitMs;
    while (!frozen() && Date.now() < deadline) await sleep(2);
    const holdDir = holdFrozen && frozen(true) ? freezerV1 : undefined;
    const listed = pidsOfDirs(io, dirs);
    const members = listed.filter((pid) => killPid(pid));
    signalled = members.length;
    if (holdDir !== undefined) {
      // Held only if no member sits outside the frozen group (a root write can put one in
      // another controller's group alone): otherwise that one could still run.
      const inFreezer = new Set(readPidsRecursive(io, holdDir));
      if (listed.every((pid) => inFreezer.has(pid))) hold = { members, thaw };
    }
  } finally {
    // Thawed at once unless held: a failure on the way thaws, as without holdFrozen.
    if (hold === undefined) thaw();
  }
  return hold === undefined
    ? { mechanism: 'freeze-kill-thaw', signalled }
    : { mechanism: 'freeze-kill-thaw', signalled, hold };
}

/**
 * Kill until every directory is empty, then remove the directories (children first),
 * retrying EBUSY (exiting tasks) until `timeoutMs`. Throws `GROUP_NOT_EMPTY` past it.
 */
export async function drainAndRemove(
  io: CgroupIo,
  dirs: readonly string[],
  timeoutMs: number,
  beforeRemove: () => void = () => undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = pidsOfDirs(io, dirs);
    if (left.length === 0) break;
    if (Date.now() > deadline) {
      throw new LimitsError(
        'GROUP_NOT_EMPTY',
        `processes ${left.slice(0, 20).join(', ')} are still in ${dirs[0] ?? ''}`,
        {
          path: dirs[0] ?? '',
        },
      );
    }
    await killDirs(io, dirs);
    await sleep(5);
  }
  beforeRemove();
  let lastError: unknown;
  for (;;) {
    lastError = undefined;
    for (const dir of dirs) {
      try {
        rmdirRecursive(io, dir);
      } catch (error) {
        lastError = error;
      }
    }
    if (lastError === undefined) return;
    if (!isErrno(lastError, 'EBUSY') || Date.now() > deadline) {
      throw new LimitsError(
        isErrno(lastError, 'EBUSY') ? 'GROUP_NOT_EMPTY' : 'CGROUPS_UNAVAILABLE',
        `cannot remove ${dirs.join(', ')}: ${isErrno(lastError) ? lastError.code : lastError instanceof Error ? lastError.message : 'unknown error'}`,
        { path: dirs[0] ?? '', cause: lastError },
      );
    }
    await killDirs(io, dirs);
    await sleep(10);
  }
}
