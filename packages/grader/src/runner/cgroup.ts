/**
 * The grader's cgroup as a grader run needs it: a memory limit, a process limit, and an atomic
 * kill of everything in it. A narrow internal seam; `group.ts` implements it with
 * `@karotte/limits`' `createGroup`.
 */
export interface GraderCgroup {
  readonly version: 1 | 2;
  /**
   * argv prefix that runs what follows inside the group, from its first instruction: joins
   * every controller, sets oom_score_adj 1000 and the rlimits (RLIMIT_NOFILE, no core dumps),
   * then execs (the same pid, so nothing is ever born outside the group).
   */
  launchPrefix(): readonly string[];
  /** The limits as read back from the kernel (memory in bytes, processes). */
  readonly limits: { readonly memoryBytes: number; readonly pids: number };
  /** Kill every process in the group, atomically with respect to fork. */
  killAll(): Promise<void>;
  /** Pids in the group (union over controllers). */
  pids(): Promise<number[]>;
  /** Limit statistics, read after the run. */
  stats(): Promise<CgroupStats>;
  /** Kill, wait until empty (bounded) and remove the group. False when processes survived. */
  destroy(timeoutMs?: number): Promise<boolean>;
}

export interface CgroupStats {
  /** Peak memory usage in bytes, when the kernel reports it. */
  readonly memoryPeakBytes: number | null;
  /** Times the kernel's OOM killer fired in the group because the group reached its own limit. */
  readonly oomKills: number;
  /** OOM kills while the group was within its limit (the host or an ancestor ran out): a host fault. */
  readonly hostOomKills: number;
  /** Times a fork failed on the process limit. */
  readonly pidsLimitHits: number;
}
