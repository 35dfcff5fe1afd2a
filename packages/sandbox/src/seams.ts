// The narrow seams through which the sandbox uses its sibling packages. Everything the
// sandbox needs from @karotte/limits and @karotte/proc-reaper passes
// through this file, so a change in one of them is a change here only.
import {
  admit,
  createEpisodeLimits,
  defaultEpisodeMemoryBytes,
  hostCapacity,
  LimitsError,
  probe as probeLimits,
  recoverLimitLeftovers,
  type Admission,
  type EpisodeLimits,
  type KillableGroup,
  type LimitEvent,
  type ProbeResult,
  type StudentLimits,
} from '@karotte/limits';
import { SandboxError } from './errors.js';
import { reap, reclaimLeftovers, type ConfirmedReapRecord, type ReclaimRecord } from '@karotte/proc-reaper';

export type {
  Admission,
  EpisodeLimits,
  KillableGroup,
  LimitEvent,
  ProbeResult,
  ConfirmedReapRecord,
  ReclaimRecord,
};

/** The episode's limits group and quota for one sandbox. */
export interface EpisodeLimitRequest {
  readonly name: string;
  readonly uid: number;
  /** The student's limits, parsed (with their defaults) by `studentLimitsSchema`. */
  readonly limits: StudentLimits;
  readonly abortSignal: AbortSignal | undefined;
}

/**
 * The episode's cgroup group (memory, pids, CPU; oom_score_adj and rlimits in its prefix) and
 * disk quota. The one place a student's limits meet the primitives' own options: the group
 * takes `memoryBytes`, `pids`, `cpuWeight` by the same names, the rlimits `nofile` and
 * `fsizeBytes`, the quota (a primitive of any size) `diskBytes` and `diskInodes` as its
 * `bytes` and `inodes`.
 */
export function createLimits(request: EpisodeLimitRequest): Promise<EpisodeLimits> {
  const { limits, abortSignal } = request;
  return createEpisodeLimits({
    group: {
      name: request.name,
      memoryBytes: limits.memoryBytes,
      pids: limits.pids,
      cpuWeight: limits.cpuWeight,
      rlimits: {
        nofile: limits.nofile,
        coreBytes: 0,
        fsizeBytes: limits.fsizeBytes,
        memlockBytes: limits.memlockBytes,
      },
      abortSignal,
    },
    quota: {
      bytes: limits.diskBytes,
      inodes: limits.diskInodes,
      ownerUid: request.uid,
      ownerGid: request.uid,
      mode: 0o700,
      abortSignal,
    },
  });
}

/** Kill every student process (cgroup, PID namespace, uid), prove none can run, and wait for their exits. */
export function reapStudent(target: {
  uid: number;
  limits: EpisodeLimits | undefined;
  initPid: number | undefined;
  deadlineMs: number;
}): Promise<ConfirmedReapRecord> {
  return reap(
    {
      uid: target.uid,
      ...(target.limits === undefined ? {} : { group: target.limits.group }),
      ...(target.initPid === undefined || target.initPid < 2 ? {} : { pidNamespaceInitPid: target.initPid }),
    },
    // The in-cohort helper is two execs (sh, setpriv); on a loaded host they can take seconds.
    // A longer bound only delays a pass the student stalls (SIGSTOP); the deadline still holds.
    // Custody follows a sandbox's reap: the exits must be over first (see awaitExit).
    { deadlineMs: target.deadlineMs, helperTimeoutMs: Math.min(10_000, target.deadlineMs), awaitExit: true },
  );
}

/** SysV IPC and POSIX queues the uid created (its IPC namespace is gone too; this proves it). */
export function reclaimIpc(uid: number): Promise<ReclaimRecord> {
  return reclaimLeftovers(uid, { ramFiles: false });
}

/** Groups and quotas whose owner process died (a killed harness). */
export async function recoverStaleLimits(): Promise<void> {
  await recoverLimitLeftovers();
}

/** What the host's limits can enforce, probed for real. */
export function probeHostLimits(): Promise<ProbeResult> {
  return probeLimits();
}

/** What this host gives all episodes together (`@karotte/limits`' admission). */
export function hostBudgets(): { memoryBytes: number; files: number; defaultEpisodeMemoryBytes: number } {
  const capacity = hostCapacity();
  return { ...capacity, defaultEpisodeMemoryBytes: defaultEpisodeMemoryBytes(capacity) };
}

/** The memory of an episode whose task names none: a share of the host (`@karotte/limits`). */
export function defaultMemoryBytes(): number {
  return defaultEpisodeMemoryBytes();
}

/**
 * Reserve the episode's memory and worst-case open files on this host (`@karotte/limits`'
 * `admit`), waiting for room. A request the whole host could never give is `HOST_UNSUPPORTED`
 * (the run is refused before it starts); one that did not fit in time is `HOST_BUSY`.
 */
export async function admitEpisode(request: {
  readonly label: string;
  readonly memoryBytes: number;
  readonly files: number;
  readonly waitMs: number;
  readonly abortSignal: AbortSignal | undefined;
}): Promise<Admission> {
  try {
    return await admit({
      label: request.label,
      memoryBytes: request.memoryBytes,
      files: request.files,
      waitMs: request.waitMs,
      ...(request.abortSignal === undefined ? {} : { abortSignal: request.abortSignal }),
    });
  } catch (error) {
    if (LimitsError.isInstance(error) && error.code === 'ADMISSION_REFUSED') {
      throw new SandboxError('HOST_UNSUPPORTED', error.message, { missing: [error.message], cause: error });
    }
    if (LimitsError.isInstance(error) && error.code === 'ADMISSION_TIMEOUT') {
      throw new SandboxError('HOST_BUSY', error.message, { cause: error });
    }
    if (LimitsError.isInstance(error) && error.code === 'ABORTED') {
      throw new SandboxError('SETUP_FAILED', 'sandbox setup aborted', { cause: error });
    }
    throw error;
  }
}
