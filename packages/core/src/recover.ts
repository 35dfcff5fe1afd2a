import { recoverGraderLeftovers, type GraderRecoveryReport } from '@karotte/grader';
import { recoverLimitLeftovers, type LimitRecoveryReport } from '@karotte/limits';
import { DEFAULT_SANDBOX_STATE_DIR, reclaimStaleSandboxes } from '@karotte/sandbox';

/** What {@link recoverLeftovers} reclaimed. */
export interface LeftoverReport {
  /** Uids of sandboxes whose harness died, now torn down. */
  readonly sandboxes: readonly number[];
  /** Grader sandboxes whose harness died mid-grading. */
  readonly graders: GraderRecoveryReport;
  /** cgroups, quota images, mounts and loop devices whose owner died. */
  readonly limits: LimitRecoveryReport;
}

/**
 * Reclaim what a harness killed with SIGKILL left behind: sandboxes (identities, namespaces,
 * mounts, network links), grader sandboxes, cgroups, quota images and loop devices. Only
 * what a dead owner recorded is touched; live episodes of other harnesses are left alone.
 * Call it once before new episodes start (the app does, for run, demo and redteam).
 */
export async function recoverLeftovers(): Promise<LeftoverReport> {
  const sandboxes = await reclaimStaleSandboxes(DEFAULT_SANDBOX_STATE_DIR);
  const graders = await recoverGraderLeftovers();
  const limits = await recoverLimitLeftovers();
  return { sandboxes, graders, limits };
}
