import { randomBytes } from 'node:crypto';
import { KarotteError } from '@karotte/base';
import { createGroup } from '@karotte/limits';
import type { LimitEvent } from '@karotte/limits';
import { GraderError } from '../errors.js';
import type { CgroupStats, GraderCgroup } from './cgroup.js';

/**
 * The grader's cgroup, from `@karotte/limits` (`createGroup`): memory and pids limits read
 * back from the kernel, an atomic kill (v1 freeze-kill-thaw, v2 `cgroup.kill`), OOM and
 * fork-refusal counters, and an owner record so a crashed harness's group is reclaimed by
 * `recoverLimitLeftovers()`. Named `karotte-grader-<label>-<random>`.
 *
 * @throws GraderError `CONFINEMENT_UNAVAILABLE` when the host cannot give the group.
 */
export async function createLimitsCgroup(options: {
  readonly memoryBytes: number;
  readonly pids: number;
  readonly nofile: number;
  readonly label: string;
}): Promise<GraderCgroup> {
  const name = `karotte-grader-${options.label.replace(/[^A-Za-z0-9_]/g, '_')}-${randomBytes(6).toString('hex')}`;
  let group;
  try {
    group = await createGroup({
      name,
      memoryBytes: options.memoryBytes,
      pids: options.pids,
      rlimits: { nofile: options.nofile, coreBytes: 0 },
      eventPollMs: 0,
    });
  } catch (error) {
    const reason = KarotteError.isInstance(error) ? `${error.code}: ${error.message}` : String(error);
    throw new GraderError('CONFINEMENT_UNAVAILABLE', `cannot create the grader's cgroup: ${reason}`, {
      cause: error,
    });
  }
  if (group.limits.pids !== options.pids || group.limits.memoryBytes > options.memoryBytes) {
    await group.remove().catch(() => undefined);
    throw new GraderError(
      'CONFINEMENT_UNAVAILABLE',
      `grader limits did not read back (memory ${group.limits.memoryBytes}, pids ${group.limits.pids})`,
    );
  }
  // An OOM kill while the group was within its own limit (`host_oom`: the host or an ancestor
  // ran out) is the host's fault, never the grader's limit.
  const count = (events: readonly LimitEvent[], limit: LimitEvent['limit']): number =>
    events.filter((e) => e.limit === limit && e.kind !== 'host_oom').reduce((sum, e) => sum + e.count, 0);
  const hostOoms = (events: readonly LimitEvent[]): number =>
    events.filter((e) => e.kind === 'host_oom').reduce((sum, e) => sum + e.count, 0);
  return {
    version: group.backend === 'cgroup-v2' ? 2 : 1,
    launchPrefix: () => group.launchPrefix(),
    limits: { memoryBytes: group.limits.memoryBytes, pids: group.limits.pids },
    killAll: async () => {
      await group.killAll();
    },
    pids: () => group.pids(),
    stats: async (): Promise<CgroupStats> => {
      const [usage, events] = await Promise.all([group.usage(), group.events()]);
      return {
        memoryPeakBytes: usage.memoryPeakBytes,
        oomKills: count(events, 'memory'),
        hostOomKills: hostOoms(events),
        pidsLimitHits: count(events, 'pids'),
      };
    },
    destroy: async () => {
      try {
        await group.remove();
        return true;
      } catch {
        return (await group.pids().catch(() => [0])).length === 0;
      }
    },
  };
}
