// The narrow seams through which the sandbox uses its sibling packages. Everything the
// sandbox needs from @karotte/limits and @karotte/proc-reaper passes
// through this file, so a change in one of them is a change here only.
import {
  createEpisodeLimits,
  probe as probeLimits,
  recoverLeftovers,
  type EpisodeLimits,
  type LimitEvent,
  type ProbeResult,
} from '@karotte/limits';
import { reap, reclaimLeftovers, type ConfirmedReapRecord, type ReclaimRecord } from '@karotte/proc-reaper';

export type { EpisodeLimits, LimitEvent, ProbeResult, ConfirmedReapRecord, ReclaimRecord };

export interface EpisodeLimitRequest {
  readonly name: string;
  readonly uid: number;
  readonly memoryBytes: number | undefined;
  readonly pidsMax: number;
  readonly cpuWeight: number | undefined;
  readonly nofile: number;
  readonly fsizeBytes: number | undefined;
  readonly diskBytes: number;
  readonly diskInodes: number;
  readonly abortSignal: AbortSignal | undefined;
}

/** The episode's cgroup group (memory, pids, CPU; oom_score_adj and rlimits in its prefix) and disk quota. */
export function createLimits(request: EpisodeLimitRequest): Promise<EpisodeLimits> {
  return createEpisodeLimits({
    group: {
      name: request.name,
      ...(request.memoryBytes === undefined ? {} : { memoryBytes: request.memoryBytes }),
      pidsMax: request.pidsMax,
      ...(request.cpuWeight === undefined ? {} : { cpuWeight: request.cpuWeight }),
      rlimits: {
        nofile: request.nofile,
        coreBytes: 0,
        ...(request.fsizeBytes === undefined ? {} : { fsizeBytes: request.fsizeBytes }),
      },
      ...(request.abortSignal === undefined ? {} : { abortSignal: request.abortSignal }),
    },
    quota: {
      bytes: request.diskBytes,
      inodes: request.diskInodes,
      ownerUid: request.uid,
      ownerGid: request.uid,
      mode: 0o700,
      ...(request.abortSignal === undefined ? {} : { abortSignal: request.abortSignal }),
    },
  });
}

/** Kill every student process (cgroup, PID namespace, uid) and prove none is alive. */
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
    { deadlineMs: target.deadlineMs, helperTimeoutMs: Math.min(10_000, target.deadlineMs) },
  );
}

/** SysV IPC and POSIX queues the uid created (its IPC namespace is gone too; this proves it). */
export function reclaimIpc(uid: number): Promise<ReclaimRecord> {
  return reclaimLeftovers(uid, { ramFiles: false });
}

/** Groups and quotas whose owner process died (a killed harness). */
export async function recoverLimitLeftovers(): Promise<void> {
  await recoverLeftovers();
}

/** What the host's limits can enforce, probed for real. */
export function probeHostLimits(): Promise<ProbeResult> {
  return probeLimits();
}
