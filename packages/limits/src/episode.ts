// One episode's limits in one call: the cgroup group and the disk quota, set up in parallel
// and torn down together, with their events merged for the verdict.
import { BadArgumentError, parseOptions } from '@karotte/base';
import { z } from 'zod';
import type { LimitEvent } from './events.js';
import type { GroupOptions, LimitGroup } from './group.js';
import { createGroup, groupOptionsSchema } from './group.js';
import type { Quota, QuotaOptions, QuotaPool } from './quota.js';
import { createQuota, quotaOptionsSchema } from './quota.js';

/** Options of {@link createEpisodeLimits}. Strict. */
export const episodeLimitsOptionsSchema = z
  .object({
    /** The cgroup group's options. @default {} (derived memory, 2048 processes) */
    group: groupOptionsSchema.prefault({}),
    /** The disk quota's options; omit for no quota. With `quotaPool`, only ownerUid, ownerGid, mode and pollMs may be given. @default none */
    quota: quotaOptionsSchema.optional(),
    /** Take the quota from this pool instead of creating one. @default none */
    quotaPool: z
      .custom<QuotaPool>(
        (value) =>
          typeof value === 'object' && value !== null && typeof (value as QuotaPool).acquire === 'function',
        { error: 'expected a QuotaPool' },
      )
      .optional(),
  })
  .strict();

/** Options of {@link createEpisodeLimits} as a caller writes them. */
export interface EpisodeLimitsOptions {
  readonly group?: GroupOptions;
  readonly quota?: QuotaOptions;
  readonly quotaPool?: QuotaPool;
}

/** An episode's group and quota. */
export interface EpisodeLimits {
  readonly group: LimitGroup;
  readonly quota: Quota | null;
  /** Events of both, in order of first sight. */
  events(): Promise<LimitEvent[]>;
  /**
   * Remove both: at once when the group is empty (both are tried even when one fails; the
   * first error is thrown, and a later call retries only what failed), the group first when a
   * member is left (its processes may hold quota files open).
   */
  remove(): Promise<{ events: LimitEvent[] }>;
}

/**
 * Create one episode's group and quota in parallel; if either fails the other is removed and
 * the error is thrown.
 */
export async function createEpisodeLimits(options: EpisodeLimitsOptions = {}): Promise<EpisodeLimits> {
  const parsed = parseOptions(episodeLimitsOptionsSchema, options, 'episode limits options');
  const quotaInput = options.quota;
  const pool = parsed.quotaPool;
  if (pool !== undefined && quotaInput !== undefined) {
    if (
      (quotaInput.bytes !== undefined && quotaInput.bytes !== pool.bytes) ||
      (quotaInput.inodes !== undefined && quotaInput.inodes !== pool.inodes) ||
      quotaInput.imageDir !== undefined
    ) {
      throw new BadArgumentError('quota.bytes, quota.inodes and quota.imageDir come from the quotaPool', {
        field:
          quotaInput.imageDir !== undefined
            ? 'quota.imageDir'
            : quotaInput.inodes !== undefined && quotaInput.inodes !== pool.inodes
              ? 'quota.inodes'
              : 'quota.bytes',
      });
    }
  }
  const groupPromise = createGroup(options.group ?? {});
  const quotaPromise: Promise<Quota | null> =
    quotaInput === undefined
      ? Promise.resolve(null)
      : pool !== undefined
        ? pool.acquire({
            ownerUid: quotaInput.ownerUid,
            ...(quotaInput.ownerGid === undefined ? {} : { ownerGid: quotaInput.ownerGid }),
            ...(quotaInput.mode === undefined ? {} : { mode: quotaInput.mode }),
            ...(quotaInput.pollMs === undefined ? {} : { pollMs: quotaInput.pollMs }),
          })
        : createQuota(quotaInput);
  const [group, quota] = await Promise.allSettled([groupPromise, quotaPromise]);
  if (group.status === 'rejected' || quota.status === 'rejected') {
    if (group.status === 'fulfilled') await group.value.remove().catch(() => undefined);
    if (quota.status === 'fulfilled' && quota.value !== null)
      await quota.value.remove().catch(() => undefined);
    throw group.status === 'rejected' ? group.reason : (quota as PromiseRejectedResult).reason;
  }
  return new Episode(group.value, quota.value);
}

class Episode implements EpisodeLimits {
  constructor(
    readonly group: LimitGroup,
    readonly quota: Quota | null,
  ) {}

  async events(): Promise<LimitEvent[]> {
    const events = [...(await this.group.events()), ...(this.quota?.events() ?? [])];
    return events.sort((a, b) => a.atMs - b.atMs);
  }

  async remove(): Promise<{ events: LimitEvent[] }> {
    const quota = this.quota;
    if (quota === null) return { events: (await this.group.remove()).events };
    let removals: { events: LimitEvent[] }[];
    if ((await this.group.pids()).length > 0) {
      // A live member may hold a quota file open: the group goes first (its removal kills and
      // drains it), and the quota only once it is gone.
      removals = [await this.group.remove(), await quota.remove()];
    } else {
      // An empty group (the usual case, after a reap) and the quota are independent: removed
      // at once, each tried whatever the other did; a later call retries only what failed.
      const settled = await Promise.allSettled([this.group.remove(), quota.remove()]);
      removals = settled.map((r) => {
        if (r.status === 'rejected') throw r.reason;
        return r.value;
      });
    }
    return { events: removals.flatMap((r) => r.events).sort((a, b) => a.atMs - b.atMs) };
  }
}
