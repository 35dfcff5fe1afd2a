import { randomBytes } from 'node:crypto';
import { KarotteError } from '@karotte/base';
import { allocateLease, type IdentityLease } from '@karotte/sandbox/confinement';
import { GraderError } from '../errors.js';
import { reclaimGraderUid, type GraderLeftoverPlaces } from '../recover.js';

/**
 * Default grader uids: below 2^31 - 1, so outside the subordinate range podman recommends
 * (`containers:2147483647:2147483648`), and below the student sandbox's range (2,000,000,000+).
 */
export const GRADER_UID_RANGE = Object.freeze({ first: 1_900_000_000, count: 100_000_000 });

/**
 * A fresh uid for one grader run, leased as the student sandbox leases its own (the same
 * allocator, `@karotte/sandbox/confinement`): a lock file that appears whole, a uid named in
 * no passwd or group entry, owning and lying in no subordinate id range, with no live
 * process; a lock whose holder died is reclaimed first (its processes, cgroups, score mount
 * and grading directories). Its gid is the same number.
 *
 * @throws GraderError `SETUP_FAILED` when no uid can be leased.
 */
export async function allocateGraderIdentity(options: {
  readonly lockDir: string;
  readonly first: number;
  readonly count: number;
  readonly places: GraderLeftoverPlaces;
}): Promise<IdentityLease> {
  try {
    return await allocateLease({
      lockDir: options.lockDir,
      firstUid: options.first,
      count: options.count,
      sandboxId: `grader-${randomBytes(5).toString('hex')}`,
      reclaim: async (_record, uid) => {
        await reclaimGraderUid(uid, options.places);
      },
    });
  } catch (error) {
    const reason = KarotteError.isInstance(error) ? `${error.code}: ${error.message}` : String(error);
    throw new GraderError('SETUP_FAILED', `cannot lease a grader uid: ${reason}`, { cause: error });
  }
}
