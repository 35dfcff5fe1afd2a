// Crash recovery: a harness killed with SIGKILL leaves groups, images, mounts and loop
// devices behind, each with an owner record. The next start reclaims every resource whose
// owner is dead, and only what a record names (never anything we did not create).
import fs from 'node:fs';
import path from 'node:path';
import { isSameProcessAlive, parseMountInfo, parseOptions } from '@karotte/base';
import type { MountInfoEntry } from '@karotte/base';
import { z } from 'zod';
import { drainAndRemove, pidsOfDirs } from './cgroup-backend.js';
import { realCgroupIo } from './cgroup-io.js';
import { DEFAULT_IMAGE_DIR, DEFAULT_REMOVE_TIMEOUT_MS, DEFAULT_STATE_DIR } from './constants.js';
import { LimitsError, throwIfAborted } from './errors.js';
import { imageLayout, teardownImage } from './quota.js';
import type { FoundRecord, GroupRecord, QuotaRecord } from './state.js';
import {
  checkSafeDir,
  claimRecord,
  groupRecordSchema,
  quotaRecordSchema,
  readRecords,
  removeRecordFile,
} from './state.js';

/** Options of {@link recoverLimitLeftovers}. Strict. */
export const recoverLimitLeftoversOptionsSchema = z
  .object({
    /** Directory of group records. @default DEFAULT_STATE_DIR ('/run/karotte') */
    stateDir: z.string().startsWith('/').default(DEFAULT_STATE_DIR),
    /** Directory of quota images and their records. @default DEFAULT_IMAGE_DIR ('/var/lib/karotte') */
    imageDir: z.string().startsWith('/').default(DEFAULT_IMAGE_DIR),
    /** How long to wait for one leftover group to empty. @default DEFAULT_REMOVE_TIMEOUT_MS (10 s) */
    removeTimeoutMs: z.number().int().positive().default(DEFAULT_REMOVE_TIMEOUT_MS),
    /** Cancels recovery between resources. */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

/** Options of {@link recoverLimitLeftovers} as a caller writes them. */
export type RecoverLimitLeftoversOptions = z.input<typeof recoverLimitLeftoversOptionsSchema>;

/** One reclaimed resource. */
export interface ReclaimedResource {
  readonly kind: 'group' | 'quota';
  readonly id: string;
  /** Pid of the dead owner. */
  readonly ownerPid: number;
  /** What was removed: cgroup directories, or the image and mount point. */
  readonly removed: readonly string[];
  /** Processes killed in leftover groups (the dead harness's students). */
  readonly killedPids: number;
}

/** What {@link recoverLimitLeftovers} did. */
export interface LimitRecoveryReport {
  readonly reclaimed: ReclaimedResource[];
  /** Records whose owner is alive (left alone). */
  readonly alive: number;
  /** Resources that could not be reclaimed (their records stay for the next try). */
  readonly failed: { readonly kind: 'group' | 'quota'; readonly id: string; readonly error: string }[];
  /** Files in the record directories that are not valid records (left alone). */
  readonly invalid: readonly string[];
}

/** True when a found record (or its claim) belongs to a dead process. */
function ownerDead<T extends { owner: GroupRecord['owner'] }>(found: FoundRecord<T>): boolean {
  if (found.record === null) return false;
  if (found.claimedBy !== null) return !isSameProcessAlive(found.claimedBy);
  return !isSameProcessAlive(found.record.owner);
}

/** Delete `<record>.json.tmp-<pid>` files (a write cut short) whose writer is gone. */
function removeStaleTemporaries(dir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const writer = /\.json\.tmp-(\d+)$/.exec(name)?.[1];
    if (writer === undefined || fs.existsSync(`/proc/${writer}`)) continue;
    try {
      fs.unlinkSync(path.join(dir, name));
    } catch {
      // raced with another recoverer
    }
  }
}

/** True when `dir` is on a cgroup file system (so rmdir there can only remove a group). */
function onCgroupFs(dir: string, mounts: readonly MountInfoEntry[]): boolean {
  const owner = mounts
    .filter((mount) => dir === mount.mountPoint || dir.startsWith(`${mount.mountPoint}/`))
    .sort((a, b) => b.mountPoint.length - a.mountPoint.length)[0];
  return owner !== undefined && (owner.fsType === 'cgroup' || owner.fsType === 'cgroup2');
}

/**
 * Reclaim what dead harnesses left: for every owner record whose owner is dead (pid gone, pid
 * reused, or another boot), kill the processes left in its groups and remove the groups;
 * unmount its quota, detach its loop devices, delete its image. Each record is claimed first
 * (an atomic rename), so two harnesses starting together never reclaim the same resource.
 * Call it once at start. Directories that do not exist are fine.
 */
export async function recoverLimitLeftovers(
  options: RecoverLimitLeftoversOptions = {},
): Promise<LimitRecoveryReport> {
  const parsed = parseOptions(recoverLimitLeftoversOptionsSchema, options, 'recover options');
  const reclaimed: ReclaimedResource[] = [];
  const failed: LimitRecoveryReport['failed'] = [];
  const invalid: string[] = [];
  let alive = 0;

  const groupDir = path.join(parsed.stateDir, 'groups');
  const layout = imageLayout(parsed.imageDir);
  for (const dir of [groupDir, layout.records]) removeStaleTemporaries(dir);
  if (fs.existsSync(groupDir)) {
    checkSafeDir(groupDir);
    const mounts = parseMountInfo(fs.readFileSync('/proc/self/mountinfo', 'utf8')).entries;
    for (const found of readRecords(groupDir, groupRecordSchema)) {
      throwIfAborted(parsed.abortSignal);
      if (found.record === null) {
        invalid.push(path.join(groupDir, found.file));
        continue;
      }
      if (!ownerDead(found)) {
        alive += 1;
        continue;
      }
      const claimed = claimRecord(groupDir, found.file);
      if (claimed === null) continue;
      const record = found.record;
      try {
        const dirs = record.dirs.filter((dir) => fs.existsSync(dir));
        for (const dir of dirs) {
          if (!onCgroupFs(dir, mounts)) {
            throw new LimitsError('UNSAFE_STATE_DIR', `${dir} is not on a cgroup file system`, { path: dir });
          }
        }
        const killed = pidsOfDirs(realCgroupIo, dirs).length;
        await drainAndRemove(realCgroupIo, dirs, parsed.removeTimeoutMs);
        removeRecordFile(groupDir, claimed);
        reclaimed.push({
          kind: 'group',
          id: record.name,
          ownerPid: record.owner.pid,
          removed: dirs,
          killedPids: killed,
        });
      } catch (error) {
        failed.push({ kind: 'group', id: record.name, error: String(error) });
      }
    }
  }

  if (fs.existsSync(layout.records)) {
    checkSafeDir(layout.records);
    for (const found of readRecords(layout.records, quotaRecordSchema)) {
      throwIfAborted(parsed.abortSignal);
      if (found.record === null) {
        invalid.push(path.join(layout.records, found.file));
        continue;
      }
      if (!ownerDead(found)) {
        alive += 1;
        continue;
      }
      const record: QuotaRecord = found.record;
      // Only paths inside this image directory, named by the record's own id.
      if (
        record.image !== path.join(layout.images, `${record.id}.img`) ||
        record.mountPoint !== path.join(layout.mounts, record.id)
      ) {
        invalid.push(path.join(layout.records, found.file));
        continue;
      }
      const claimed = claimRecord(layout.records, found.file);
      if (claimed === null) continue;
      try {
        await teardownImage(record.image, record.mountPoint);
        removeRecordFile(layout.records, claimed);
        reclaimed.push({
          kind: 'quota',
          id: record.id,
          ownerPid: record.owner.pid,
          removed: [record.image, record.mountPoint],
          killedPids: 0,
        });
      } catch (error) {
        failed.push({ kind: 'quota', id: record.id, error: String(error) });
      }
    }
  }
  return { reclaimed, alive, failed, invalid };
}
