// One episode's cgroup group: memory (RAM-backed files and SysV shm included: they are
// charged to the memory cgroup of the process that creates the pages), processes and CPU
// weight, on cgroup v2 or v1, with every value read back, limit-hit events, an atomic kill
// and a launch prefix that starts processes inside the group.
import crypto from 'node:crypto';
import path from 'node:path';
import { parseOptions } from '@karotte/base';
import { z } from 'zod';
import type { AppliedLimits, CgroupBackend, GroupCounters, WantedLimits } from './cgroup-backend.js';
import { createV1, createV2, drainAndRemove, groupDirs, killDirs, pidsOfDirs } from './cgroup-backend.js';
import type { CgroupHierarchy } from './cgroup-detect.js';
import { cgroupHierarchySchema, detectCgroups } from './cgroup-detect.js';
import type { CgroupIo } from './cgroup-io.js';
import { readNumber, realCgroupIo } from './cgroup-io.js';
import {
  DEFAULT_EVENT_POLL_MS,
  DEFAULT_REMOVE_TIMEOUT_MS,
  DEFAULT_STATE_DIR,
  HARNESS_HEADROOM_BYTES,
} from './constants.js';
import { LimitsError, throwIfAborted } from './errors.js';
import type { LimitContract, LimitEvent } from './events.js';
import { FirstSeen } from './events.js';
import type { GroupKillOptions, GroupKillResult, KillableGroup } from './group-types.js';
import type { LaunchBinaries, RlimitOptions, Rlimits } from './launch.js';
import { buildLaunchPrefix, resolveLaunchBinaries, rlimitsSchema } from './launch.js';
import { hostMemoryBytes, pageSize } from './proc.js';
import { DEFAULT_CPU_WEIGHT, DEFAULT_PIDS, MAX_PIDS, MIN_MEMORY_BYTES, limitRules } from './spec.js';
import { ensureSafeDir, removeRecord, selfIdentity, writeRecord } from './state.js';

/** Group names: start with `karotte`, then letters, digits, `_`, `.`, `-`; at most 100 characters. */
const GROUP_NAME_PATTERN = /^karotte[A-Za-z0-9_.-]*$/;

const absolutePath = z.string().startsWith('/').max(4096);

// Any process count a cgroup takes: a group is also the grader's and a test's, not only a
// student's (whose smallest is studentLimitsSchema's 16).
const groupPids = z.number().int().min(1).max(MAX_PIDS);

/**
 * Options of {@link createGroup}. Strict: an unknown key is an error naming it. `memoryBytes`
 * and `cpuWeight` have the bounds of `studentLimitsSchema`; `pids` accepts every count from 1.
 */
export const groupOptionsSchema = z
  .object({
    /** Group name, unique on the host. @default `karotte-<pid>-<random hex>` */
    name: z.string().max(100).regex(GROUP_NAME_PATTERN).optional(),
    /**
     * Memory limit of the whole group (RSS, page cache, tmpfs and /dev/shm files, SysV shm),
     * in bytes. Rounded down to the page size by the kernel.
     * @default min(host RAM, every memory limit above this process's cgroup) − harnessHeadroomBytes
     */
    memoryBytes: limitRules.memoryBytes.optional(),
    /** Memory kept for the harness when `memoryBytes` is derived. @default HARNESS_HEADROOM_BYTES (1 GiB) */
    harnessHeadroomBytes: z.number().int().nonnegative().default(HARNESS_HEADROOM_BYTES),
    /** Most processes and threads alive in the group at once, 1 to 4194304. @default DEFAULT_PIDS (512) */
    pids: groupPids.default(DEFAULT_PIDS),
    /**
     * CPU weight, 1–10000. When given and the cpu controller is missing, creation fails;
     * when omitted it is applied where the controller exists and reported otherwise.
     * @default DEFAULT_CPU_WEIGHT (100)
     */
    cpuWeight: limitRules.cpuWeight.optional(),
    /** Per-process limits applied by {@link LimitGroup.launchPrefix}. @default { nofile: 1024, coreBytes: 0, memlockBytes: 65536 } */
    rlimits: rlimitsSchema.prefault({}),
    /** Directory of owner records (for crash recovery). @default DEFAULT_STATE_DIR ('/run/karotte') */
    stateDir: absolutePath.default(DEFAULT_STATE_DIR),
    /** Where to create the group. @default detected with detectCgroups() */
    hierarchy: cgroupHierarchySchema.optional(),
    /** How long remove() waits for the group to empty. @default DEFAULT_REMOVE_TIMEOUT_MS (10 s) */
    removeTimeoutMs: z.number().int().positive().default(DEFAULT_REMOVE_TIMEOUT_MS),
    /**
     * Background read of the limit-hit counters, so an event's `atMs` is close to when it
     * happened even if `events()` is called late. 0 disables it.
     * @default DEFAULT_EVENT_POLL_MS (1000)
     */
    eventPollMs: z.number().int().nonnegative().default(DEFAULT_EVENT_POLL_MS),
    /** Cancels creation. */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

/** Options of {@link createGroup} as a caller writes them. */
export type GroupOptions = z.input<typeof groupOptionsSchema>;

/** How each limit of a group is enforced, with the reason. */
export interface GroupLimitReport {
  readonly contract: LimitContract;
  readonly mechanism: string;
  readonly reason: string;
}

/** Current usage of a group. */
export interface GroupUsage {
  readonly memoryBytes: number;
  readonly memoryPeakBytes: number | null;
  readonly pids: number;
  readonly pidsPeak: number | null;
  /** Times memory hit the limit and was reclaimed (v2 memory.events max; v1 memory.failcnt). */
  readonly memoryLimitHits: number;
}

/** What {@link LimitGroup.remove} returns: the last counters read before the group was removed. */
export interface GroupRemoval {
  readonly events: LimitEvent[];
}

/**
 * One episode's cgroup group. Implements {@link KillableGroup} for the reaper.
 */
export interface LimitGroup extends KillableGroup {
  readonly name: string;
  readonly backend: 'cgroup-v1' | 'cgroup-v2';
  /** The values in force, as read back from the kernel. */
  readonly limits: {
    readonly memoryBytes: number;
    readonly pids: number;
    /** Null when the cpu controller is not available. */
    readonly cpuWeight: number | null;
    readonly swap: AppliedLimits['swap'];
    /**
     * v1: the TCP buffer limit read back (`memory.kmem.tcp.limit_in_bytes`, a quarter of
     * `memoryBytes`), charged outside `memoryBytes`. Null on v2, where `memoryBytes` counts them.
     */
    readonly tcpMemoryBytes: number | null;
  };
  /** How memory, pids and CPU weight are enforced. */
  readonly contracts: {
    readonly memory: GroupLimitReport;
    readonly pids: GroupLimitReport;
    readonly cpu_weight: GroupLimitReport;
  };
  /** The group's directories (one per v1 hierarchy, one on v2). */
  readonly dirs: readonly string[];
  /** The rlimits {@link launchPrefix} applies by default. */
  readonly rlimits: Rlimits;
  /**
   * argv that starts a process inside this group: it joins every controller, sets
   * oom_score_adj 1000, applies the rlimits with the trusted `prlimit`, then execs the rest:
   * `[...group.launchPrefix(), '/usr/bin/setpriv', ..., 'bash']`.
   */
  launchPrefix(options?: { readonly rlimits?: RlimitOptions }): string[];
  usage(): Promise<GroupUsage>;
  /** Limit hits since creation (OOM kills, fork refusals). */
  events(): Promise<LimitEvent[]>;
  killAll(options?: GroupKillOptions): Promise<GroupKillResult>;
  pids(): Promise<number[]>;
  /**
   * Read every limit back again (what a group kept waiting, a warm pool's, must still hold
   * when it is used): one sentence per limit that no longer holds. Empty: they all stand.
   */
  recheck(): Promise<string[]>;
  /** Kill every member, wait until empty, remove the group and its owner record. Idempotent. */
  remove(): Promise<GroupRemoval>;
}

/**
 * The memory a student may use when the caller gives none: the tightest of the host's RAM
 * and every memory limit from `startDir` up its hierarchy, minus the harness headroom.
 */
function defaultStudentMemory(
  io: CgroupIo,
  hierarchy: CgroupHierarchy,
  headroomBytes: number,
): { memoryBytes: number; tightestBytes: number } {
  let tightest = hostMemoryBytes();
  const file = hierarchy.version === 2 ? 'memory.max' : 'memory.limit_in_bytes';
  let dir = hierarchy.version === 2 ? hierarchy.base : hierarchy.memory;
  for (let depth = 0; depth < 64; depth += 1) {
    if (!io.exists(`${dir}/${file}`)) break;
    try {
      const limit = readNumber(io, `${dir}/${file}`);
      if (Number.isFinite(limit) && limit > 0) tightest = Math.min(tightest, limit);
    } catch {
      break;
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  const page = pageSize();
  const memoryBytes = Math.floor((tightest - headroomBytes) / page) * page;
  return { memoryBytes, tightestBytes: tightest };
}

/** Injectable parts for tests (a fake cgroupfs on hosts without v2 controllers). */
export interface GroupEnvironment {
  readonly io: CgroupIo;
  readonly binaries?: LaunchBinaries;
}

/**
 * Create one episode's group: detect (or take) the hierarchy, write an owner record, create
 * the group, write every limit and read it back. Throws {@link LimitsError}
 * (`CGROUPS_UNAVAILABLE`, `LIMIT_NOT_APPLIED`, `GROUP_EXISTS`, `INSUFFICIENT_MEMORY`,
 * `UNSAFE_STATE_DIR`, `ABORTED`) or BadArgumentError for invalid options.
 */
export async function createGroup(options: GroupOptions = {}): Promise<LimitGroup> {
  const parsed = parseOptions(groupOptionsSchema, options, 'group options');
  return createGroupIn({ io: realCgroupIo }, parsed);
}

/** {@link createGroup} over an injectable file system (internal; tests use it with a fake v2 tree). */
export function createGroupIn(
  environment: GroupEnvironment,
  options: z.output<typeof groupOptionsSchema>,
): Promise<LimitGroup> {
  try {
    return Promise.resolve(createGroupSync(environment, options));
  } catch (error) {
    return Promise.reject(
      error instanceof Error ? error : new LimitsError('CGROUPS_UNAVAILABLE', String(error)),
    );
  }
}

function createGroupSync(
  environment: GroupEnvironment,
  options: z.output<typeof groupOptionsSchema>,
): LimitGroup {
  throwIfAborted(options.abortSignal);
  const { io } = environment;
  const binaries = environment.binaries ?? resolveLaunchBinaries();
  let hierarchy = options.hierarchy ?? null;
  if (hierarchy === null) {
    const detection = detectCgroups();
    if (detection.hierarchy === null) {
      throw new LimitsError(
        'CGROUPS_UNAVAILABLE',
        `no usable cgroup hierarchy: ${detection.reasons.join('; ')}`,
      );
    }
    hierarchy = detection.hierarchy;
  }
  let memoryBytes = options.memoryBytes;
  if (memoryBytes === undefined) {
    const derived = defaultStudentMemory(io, hierarchy, options.harnessHeadroomBytes);
    if (derived.memoryBytes < MIN_MEMORY_BYTES) {
      throw new LimitsError(
        'INSUFFICIENT_MEMORY',
        `only ${derived.tightestBytes} bytes of memory are available and ${options.harnessHeadroomBytes} are kept for the harness`,
      );
    }
    memoryBytes = derived.memoryBytes;
  }
  const name = options.name ?? `karotte-${process.pid}-${crypto.randomBytes(6).toString('hex')}`;
  const wanted: WantedLimits = {
    memoryBytes,
    pids: options.pids,
    cpuWeight: options.cpuWeight ?? DEFAULT_CPU_WEIGHT,
    cpuWeightExplicit: options.cpuWeight !== undefined,
  };
  const stateDir = path.join(options.stateDir, 'groups');
  ensureSafeDir(options.stateDir, 0o755);
  ensureSafeDir(stateDir, 0o700);
  const dirs = groupDirs(hierarchy, name);
  // The record goes first: a harness killed between mkdir and the next line still leaves a
  // record naming every directory it may have created.
  writeRecord(stateDir, name, {
    kind: 'group',
    format: 1,
    name,
    owner: selfIdentity(),
    createdAtMs: Date.now(),
    cgroupVersion: hierarchy.version,
    dirs,
  });
  let backend: CgroupBackend;
  try {
    throwIfAborted(options.abortSignal);
    backend =
      hierarchy.version === 2 ? createV2(io, hierarchy, name, wanted) : createV1(io, hierarchy, name, wanted);
  } catch (error) {
    removeRecord(stateDir, name);
    throw error;
  }
  return new CgroupLimitGroup(
    io,
    binaries,
    backend,
    name,
    stateDir,
    options.rlimits,
    options.removeTimeoutMs,
    options.eventPollMs,
  );
}

class CgroupLimitGroup implements LimitGroup {
  readonly backend: 'cgroup-v1' | 'cgroup-v2';
  readonly limits: LimitGroup['limits'];
  readonly contracts: LimitGroup['contracts'];
  readonly dirs: readonly string[];
  private readonly baseline: GroupCounters;
  private readonly firstSeen = new FirstSeen();
  private removal: Promise<GroupRemoval> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly io: CgroupIo,
    private readonly binaries: LaunchBinaries,
    private readonly cgroup: CgroupBackend,
    readonly name: string,
    private readonly stateDir: string,
    readonly rlimits: Rlimits,
    private readonly removeTimeoutMs: number,
    eventPollMs: number,
  ) {
    this.backend = cgroup.version === 2 ? 'cgroup-v2' : 'cgroup-v1';
    this.dirs = cgroup.dirs;
    this.limits = { ...cgroup.applied };
    this.baseline = cgroup.counters();
    const v = cgroup.version;
    this.contracts = {
      memory: {
        contract: 'prevented',
        mechanism:
          v === 2
            ? 'cgroup v2 memory.max, memory.swap.max, memory.oom.group'
            : 'cgroup v1 memory.limit_in_bytes, memory.kmem.tcp.limit_in_bytes',
        reason:
          `limit ${cgroup.applied.memoryBytes} bytes read back; swap: ${cgroup.applied.swap}; ` +
          (cgroup.applied.tcpMemoryBytes === null
            ? 'TCP buffers: charged to memory.max'
            : `TCP buffers: ${cgroup.applied.tcpMemoryBytes} bytes more (memory.kmem.tcp.limit_in_bytes read back)`),
      },
      pids: {
        contract: 'prevented',
        mechanism: `cgroup v${v} pids.max`,
        reason: `limit ${cgroup.applied.pids} read back`,
      },
      cpu_weight:
        cgroup.applied.cpuWeight === null
          ? { contract: 'not_supported', mechanism: 'none', reason: cgroup.cpuNote ?? 'no cpu controller' }
          : {
              contract: 'prevented',
              mechanism: v === 2 ? 'cgroup v2 cpu.weight' : 'cgroup v1 cpu.shares',
              reason: `weight ${cgroup.applied.cpuWeight} read back`,
            },
    };
    this.startPolling(eventPollMs);
  }

  private startPolling(eventPollMs: number): void {
    if (eventPollMs === 0) return;
    this.timer = setInterval(() => {
      try {
        this.diff(this.cgroup.counters());
      } catch {
        // the group is being removed
      }
    }, eventPollMs);
    this.timer.unref();
  }

  private assertLive(): void {
    if (this.removal !== null) throw new LimitsError('REMOVED', `group ${this.name} was removed`);
  }

  launchPrefix(options: { readonly rlimits?: RlimitOptions } = {}): string[] {
    this.assertLive();
    const rlimits =
      options.rlimits === undefined
        ? this.rlimits
        : parseOptions(rlimitsSchema, { ...this.rlimits, ...options.rlimits }, 'rlimits');
    return buildLaunchPrefix(this.binaries, this.cgroup.procsFiles, rlimits);
  }

  usage(): Promise<GroupUsage> {
    this.assertLive();
    const counters = this.cgroup.counters();
    return Promise.resolve({
      memoryBytes: counters.memoryBytes,
      memoryPeakBytes: counters.memoryPeakBytes,
      pids: counters.pids,
      pidsPeak: counters.pidsPeak,
      memoryLimitHits: counters.memoryMaxHits - this.baseline.memoryMaxHits,
    });
  }

  recheck(): Promise<string[]> {
    if (this.removal !== null) return Promise.resolve([`group ${this.name} was removed`]);
    return Promise.resolve(this.cgroup.recheck());
  }

  events(): Promise<LimitEvent[]> {
    this.assertLive();
    return Promise.resolve(this.diff(this.cgroup.counters()));
  }

  private diff(now: GroupCounters): LimitEvent[] {
    const events: LimitEvent[] = [];
    const nowMs = Date.now();
    const oomKills = now.oomKills - this.baseline.oomKills;
    if (oomKills > 0) {
      const counter = this.cgroup.version === 2 ? 'memory.events:oom_kill' : 'memory.oom_control:oom_kill';
      const own = this.ownLimitReached(now);
      events.push({
        limit: 'memory',
        kind: own.reached ? 'oom_kill' : 'host_oom',
        count: oomKills,
        atMs: this.firstSeen.at(own.reached ? 'memory' : 'host_oom', nowMs),
        observed: now.memoryPeakBytes ?? now.memoryBytes,
        limitValue: this.limits.memoryBytes,
        source: own.reached ? counter : `${counter}, ${own.evidence}`,
      });
    }
    const refusals = now.pidsMaxHits - this.baseline.pidsMaxHits;
    if (refusals > 0) {
      events.push({
        limit: 'pids',
        kind: 'max',
        count: refusals,
        atMs: this.firstSeen.at('pids', nowMs),
        observed: now.pidsPeak ?? now.pids,
        limitValue: this.limits.pids,
        source: 'pids.events:max',
      });
    }
    return events;
  }

  /**
   * Whether the group itself reached its limit since creation: the one case an OOM kill in it
   * is the student's. The kernel counts every OOM kill of a member (a global OOM, an ancestor's
   * limit: v1's `oom_kill` counts them all), so a kill alone proves nothing. v2: `memory.events`
   * `oom` (the group's own limit was reached and an allocation was about to fail). v1, which has
   * no such counter: a failed charge at the group's own limit (`memory.failcnt` or
   * `memory.memsw.failcnt`, the one charged first) or a peak at the limit. A charge refused at
   * an ancestor's limit counts in the ancestor's failcnt, not here.
   */
  private ownLimitReached(now: GroupCounters): { reached: boolean; evidence: string } {
    const base = this.baseline;
    if (now.ownOoms !== null) {
      const ooms = now.ownOoms - (base.ownOoms ?? 0);
      return {
        reached: ooms > 0,
        evidence: `memory.events oom ${ooms}: the group never reached its own limit`,
      };
    }
    const failed = now.memoryMaxHits - base.memoryMaxHits + (now.memswMaxHits - base.memswMaxHits);
    const peak = now.memoryPeakBytes;
    const atLimit = peak !== null && peak >= this.limits.memoryBytes - 64 * 1024;
    return {
      reached: failed > 0 || atLimit,
      evidence: `memory.failcnt 0, peak ${String(peak)} of ${this.limits.memoryBytes} bytes: the group never reached its own limit`,
    };
  }

  killAll(options: GroupKillOptions = {}): Promise<GroupKillResult> {
    return killDirs(this.io, this.dirs, { holdFrozen: options.holdFrozen === true });
  }

  pids(): Promise<number[]> {
    return Promise.resolve(pidsOfDirs(this.io, this.dirs));
  }

  remove(): Promise<GroupRemoval> {
    // A failed removal can be retried: forget it, so the next call tries again.
    this.removal ??= this.doRemove().catch((error: unknown) => {
      this.removal = null;
      throw error;
    });
    return this.removal;
  }

  private async doRemove(): Promise<GroupRemoval> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    let events: LimitEvent[] = [];
    await drainAndRemove(this.io, this.dirs, this.removeTimeoutMs, () => {
      // Read the counters at the last moment they exist (the group is empty, not yet removed).
      events = this.diff(this.cgroup.counters());
    });
    removeRecord(this.stateDir, this.name);
    return { events };
  }
}
