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
  killAll(options?: GroupKillOptions): Promise<GroupKillResult>;
  /** Pids currently in the group (union over controllers for v1). */
  pids(): Promise<number[]>;
}

/** Options of {@link KillableGroup.killAll}. */
export interface GroupKillOptions {
  /**
   * Leave a group killed by freezing it (cgroup v1) frozen, and hand back a {@link FrozenHold}:
   * its members then stay where they are with SIGKILL pending, unable to run a single
   * instruction of user code, and the kernel starts their exits only at `thaw()`. A caller that
   * proves nothing can run (the reaper) looks at thousands of killed processes without
   * competing with their exit work, and need not look at the held members at all. Held only
   * when the freeze took (`FROZEN` read back) and every member of every controller is in the
   * frozen group; ignored where the kill needs no freeze (`cgroup.kill`) or where a frozen
   * process still exits when killed (the cgroup v2 freezer). Whoever gets a hold must thaw it.
   * @default false
   */
  readonly holdFrozen?: boolean;
}

/**
 * A group left frozen after its kill. While held, each of `members` is frozen with SIGKILL
 * pending: it cannot run a user instruction, fork or exit, so its pid still names the process
 * that was killed; nothing joins the group but by a root write (a task attached to a frozen
 * group is frozen too).
 */
export interface FrozenHold {
  /** Every member at the kill, each signalled; sorted. */
  readonly members: readonly number[];
  /** Thaws the group so its killed members can exit. Idempotent. */
  thaw(): void;
}

export interface GroupKillResult {
  /** How the kill was delivered. */
  readonly mechanism: 'cgroup.kill' | 'freeze-kill-thaw';
  /** Processes signalled (v1), or the member count seen just before the kill (v2). */
  readonly signalled: number;
  /** Present when the group was left frozen (`holdFrozen`). */
  readonly hold?: FrozenHold;
}
