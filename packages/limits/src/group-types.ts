/**
 * What other packages (the reaper, the sandbox) need from an episode's cgroup group. The
 * limits package implements it for cgroup v1 and v2; the reaper depends only on this shape.
 */
export interface KillableGroup {
  /** Short name of the group (contains `karotte`). */
  readonly name: string;
  /**
   * Kill every process in the group atomically with respect to fork: cgroup v2 writes
   * `cgroup.kill`; cgroup v1 freezes the group, SIGKILLs every member, then thaws it so the
   * kernel can deliver the signals and reap.
   */
  killAll(): Promise<GroupKillResult>;
  /** Pids currently in the group (union over controllers for v1). */
  pids(): Promise<number[]>;
}

export interface GroupKillResult {
  /** How the kill was delivered. */
  readonly mechanism: 'cgroup.kill' | 'freeze-kill-thaw';
  /** Processes signalled (v1), or the member count seen just before the kill (v2). */
  readonly signalled: number;
}
