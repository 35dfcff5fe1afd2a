// reclaimLeftovers(): after reap(), remove what outlives processes. SysV objects by CREATOR
// (the owner can be rewritten with IPC_SET, the creator cannot), POSIX message queues by
// owner, RAM-backed files of the uid in tmpfs/ramfs mounts (through file-guard's link-safe
// reclaim), the uid's kernel keyrings emptied (see keys.ts), then list again: whatever is
// still there is reported, never ignored.
import { lstatSync, readFileSync } from 'node:fs';
import { parseMountInfo } from '@karotte/base';
import type { MisbehaviorRecord } from '@karotte/base';
import {
  BadArgumentError,
  createMisbehavior,
  escapeForDisplay,
  misbehaviorRecordSchema,
  parseOptions,
  resolveTrustedBinary,
} from '@karotte/base';
import { reclaim as reclaimFiles } from '@karotte/file-guard';
import { z } from 'zod';
import { ProcReaperError } from './errors.js';
import { listSysvByCreator, removeSysv, sweepMqueues } from './ipc.js';
import { sweepKeys } from './keys.js';

const count = z.number().int().nonnegative();
const absolutePath = z.string().refine((value) => value.startsWith('/') && !value.includes('\0'), {
  error: 'must be an absolute path',
});

/** Options of {@link reclaimLeftovers}. */
export const reclaimLeftoversOptionsSchema = z
  .object({
    /**
     * Remove SysV shared memory, semaphores and message queues created by the uid.
     * @default true
     */
    sysv: z.boolean().default(true),
    /**
     * Remove POSIX message queues owned by the uid (through a private mqueue mount).
     * @default true
     */
    posixMqueues: z.boolean().default(true),
    /**
     * Remove files of the uid in RAM-backed filesystems (tmpfs, ramfs) with file-guard's
     * `reclaim()`.
     * @default true
     */
    ramFiles: z.boolean().default(true),
    /**
     * Empty the uid's kernel keyrings (user, user-session, persistent) and prove, from
     * /proc/key-users, that no other key of the uid is left. Nothing runs when the uid owns no
     * key.
     * @default true
     */
    keys: z.boolean().default(true),
    /**
     * Roots swept for RAM-backed files.
     * @default every read-write tmpfs and ramfs mount point in /proc/self/mountinfo whose root
     *   the uid could enter (not one owned by another uid that its group and others cannot search)
     */
    ramFileRoots: z.array(absolutePath).optional(),
    /**
     * Subtrees the file sweep keeps (passed to file-guard).
     * @default []
     */
    exclude: z.array(absolutePath).default([]),
    /**
     * Allow a uid below 1000 (system accounts); uid 0 is always refused.
     * @default false
     */
    allowSystemUid: z.boolean().default(false),
    /**
     * Bound on each step (each trusted command, the file sweep).
     * @default 60000
     */
    timeoutMs: z.number().int().positive().max(3_600_000).default(60_000),
    /**
     * Cancels the call: checked before the sweeps start and again once they have all ended
     * (throws `ProcReaperError` `ABORTED`, whatever else failed); the RAM-file sweep also stops
     * at it, the others run to their end (each bounded by `timeoutMs`).
     */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

/** Options of {@link reclaimLeftovers}. */
export type ReclaimLeftoversOptions = z.input<typeof reclaimLeftoversOptionsSchema>;

const sysvLeftSchema = z.object({ kind: z.enum(['shm', 'sem', 'msg']), id: count, owner: count }).strict();

/** Record of a {@link reclaimLeftovers}: JSON-serialisable, for the verdict. */
export const reclaimRecordSchema = z
  .object({
    uid: z.number().int().positive(),
    /** null when the step was switched off. */
    sysv: z
      .object({
        removed: z.object({ shm: count, sem: count, msg: count }).strict(),
        /** Removed segments still attached by some process: freed at its last detach. */
        pendingDestroy: count,
        left: z.array(sysvLeftSchema),
      })
      .strict()
      .nullable(),
    posixMqueues: z
      .object({
        /** Escaped queue names (first 64). */
        removed: z.array(z.string()),
        removedCount: count,
        left: z.array(z.string()),
      })
      .strict()
      .nullable(),
    ramFiles: z
      .object({
        roots: z.array(z.string()),
        removed: count,
        failed: count,
        timedOut: z.boolean(),
        complete: z.boolean(),
      })
      .strict()
      .nullable(),
    keys: z
      .object({
        /** The uid's keyrings that were emptied (none when it owned no key). */
        cleared: z.array(z.string()),
        /** Keyrings that could not be emptied, with the reason. */
        failed: z.array(z.string()),
        /** Keys of the uid still alive besides its emptied keyrings. */
        left: count,
      })
      .strict()
      .nullable(),
    /** Every step that ran left nothing of the uid behind. */
    complete: z.boolean(),
    durationMs: z.number().nonnegative(),
    /** `UNRECLAIMABLE` when something is left. */
    misbehavior: z.array(misbehaviorRecordSchema),
  })
  .strict();

/** Record of a {@link reclaimLeftovers}. */
export type ReclaimRecord = z.infer<typeof reclaimRecordSchema>;

const RAM_FS_TYPES = new Set(['tmpfs', 'ramfs']);
const MAX_LISTED = 64;

/**
 * Whether `uid` could ever have reached into `root`: false for a directory owned by another
 * uid that neither its group nor others may search (another episode's grader score tmpfs, a
 * root-only runtime directory). Such a root is not walked: nothing of the uid can be in it,
 * and a walk would hold it open while its owner unmounts it. Unknown (a failed lstat): true.
 */
function reachableBy(uid: number, root: string): boolean {
  try {
    const stats = lstatSync(root);
    return !stats.isDirectory() || stats.uid === uid || (stats.mode & 0o011) !== 0;
  } catch {
    return true;
  }
}

/** Read-write tmpfs and ramfs mount points in a mountinfo text, deduplicated, in order. */
export function ramMountPoints(mountinfo: string): string[] {
  const out: string[] = [];
  for (const mount of parseMountInfo(mountinfo).entries) {
    if (!RAM_FS_TYPES.has(mount.fsType) || mount.readOnly) continue;
    if (!out.includes(mount.mountPoint)) out.push(mount.mountPoint);
  }
  return out;
}

/**
 * Remove what the uid's processes left behind that outlives them: SysV shared memory,
 * semaphores and message queues it created, POSIX message queues it owns, its files in
 * RAM-backed filesystems, and its kernel keys. Run it after {@link reap} confirmed emptiness (a live process could
 * create new objects while it runs). Only objects visible from this process's IPC and mount
 * namespaces are seen; a private IPC namespace of the sandbox dies with its last process.
 *
 * @throws BadArgumentError for uid 0, a system uid without `allowSystemUid`, or bad options.
 * @throws ProcReaperError `NOT_PRIVILEGED` when not root; `ABORTED`.
 * @throws SystemError when a trusted binary is missing or a sweep cannot run at all.
 */
export async function reclaimLeftovers(
  uid: number,
  options: ReclaimLeftoversOptions = {},
): Promise<ReclaimRecord> {
  const parsed = parseOptions(reclaimLeftoversOptionsSchema, options, 'reclaim options');
  if (!Number.isInteger(uid) || uid < 0 || uid > 4_294_967_294) {
    throw new BadArgumentError(`uid must be an integer uid, got ${String(uid)}`, { field: 'uid' });
  }
  if (uid === 0) throw new BadArgumentError('refusing to reclaim what uid 0 owns', { field: 'uid' });
  if (uid < 1000 && !parsed.allowSystemUid) {
    throw new BadArgumentError(`refusing to reclaim what system uid ${uid} owns without allowSystemUid`, {
      field: 'uid',
    });
  }
  if (process.geteuid?.() !== 0) {
    throw new ProcReaperError('NOT_PRIVILEGED', 'reclaimLeftovers() needs root');
  }
  const checkAbort = (): void => {
    if (parsed.abortSignal?.aborted) {
      throw new ProcReaperError('ABORTED', 'reclaim was aborted', { cause: parsed.abortSignal.reason });
    }
  };
  const start = Date.now();
  checkAbort();

  // The four sweeps are independent of each other (every process of the uid is gone before a
  // reclaim), so they run at once: each is a trusted program or a walk, and waiting for one
  // before starting the next only added their times up. Each returns its part of the record
  // and why it is incomplete, if it is.
  type Part<T> = Promise<{ record: T; reasons: string[] }>;

  const sweepSysv = async (): Part<ReclaimRecord['sysv']> => {
    if (!parsed.sysv) return { record: null, reasons: [] };
    const ipcrm = resolveTrustedBinary('ipcrm');
    const found = listSysvByCreator(uid);
    await removeSysv(ipcrm, found, parsed.timeoutMs);
    const after = listSysvByCreator(uid);
    const left = after.filter((object) => !object.pendingDestroy);
    const stillThere = new Set(left.map((object) => `${object.kind}:${object.id}`));
    const removed = { shm: 0, sem: 0, msg: 0 };
    for (const object of found) if (!stillThere.has(`${object.kind}:${object.id}`)) removed[object.kind] += 1;
    return {
      record: {
        removed,
        pendingDestroy: after.length - left.length,
        left: left
          .slice(0, MAX_LISTED)
          .map((object) => ({ kind: object.kind, id: object.id, owner: object.uid })),
      },
      reasons:
        left.length > 0
          ? [`${left.length} SysV IPC object(s) created by uid ${uid} could not be removed`]
          : [],
    };
  };

  const sweepQueues = async (): Part<ReclaimRecord['posixMqueues']> => {
    if (!parsed.posixMqueues) return { record: null, reasons: [] };
    const swept = await sweepMqueues({ perl: resolveTrustedBinary('perl') }, uid, parsed.timeoutMs);
    return {
      record: {
        removed: swept.removed.slice(0, MAX_LISTED).map((name) => escapeForDisplay(name, 255)),
        removedCount: swept.removed.length,
        left: swept.left.slice(0, MAX_LISTED).map((name) => escapeForDisplay(name, 255)),
      },
      reasons:
        swept.left.length > 0 ? [`${swept.left.length} POSIX message queue(s) of uid ${uid} are left`] : [],
    };
  };

  const sweepRamFiles = async (): Part<ReclaimRecord['ramFiles']> => {
    if (!parsed.ramFiles) return { record: null, reasons: [] };
    const roots =
      parsed.ramFileRoots ??
      ramMountPoints(readFileSync('/proc/self/mountinfo', 'utf8')).filter((root) => reachableBy(uid, root));
    if (roots.length === 0) {
      return { record: { roots: [], removed: 0, failed: 0, timedOut: false, complete: true }, reasons: [] };
    }
    const result = await reclaimFiles(uid, {
      roots,
      exclude: parsed.exclude,
      allowSystemUid: parsed.allowSystemUid,
      timeoutMs: parsed.timeoutMs,
      ...(parsed.abortSignal === undefined ? {} : { abortSignal: parsed.abortSignal }),
    });
    return {
      record: {
        roots: roots.map((root) => escapeForDisplay(root)),
        removed: result.removed,
        failed: result.failedCount,
        timedOut: result.timedOut,
        complete: result.complete,
      },
      reasons: result.complete
        ? []
        : [result.misbehavior?.message ?? `RAM-backed files of uid ${uid} could not all be removed`],
    };
  };

  const sweepKeyrings = async (): Part<ReclaimRecord['keys']> => {
    if (!parsed.keys) return { record: null, reasons: [] };
    const swept = await sweepKeys(
      { setpriv: resolveTrustedBinary('setpriv'), perl: resolveTrustedBinary('perl') },
      uid,
      parsed.timeoutMs,
    );
    const reasons: string[] = [];
    if (swept.failed.length > 0)
      reasons.push(`keyrings of uid ${uid} could not be emptied (${swept.failed.join(', ')})`);
    if (swept.left > 0)
      reasons.push(
        `${swept.left} kernel key(s) of uid ${uid} are left, linked from keyrings it does not own`,
      );
    return {
      record: { cleared: swept.cleared, failed: swept.failed.slice(0, MAX_LISTED), left: swept.left },
      reasons,
    };
  };

  // Every sweep has ended before this returns or throws: none is left running behind an error.
  const parts = await Promise.allSettled([sweepSysv(), sweepQueues(), sweepRamFiles(), sweepKeyrings()]);
  // An abort during the sweeps is what the caller sees, not a sweep's failure it caused.
  checkAbort();
  const [sysvPart, queuesPart, ramPart, keysPart] = parts;
  const sysv = settledValue(sysvPart);
  const posixMqueues = settledValue(queuesPart);
  const ramFiles = settledValue(ramPart);
  const keys = settledValue(keysPart);
  const reasons = [sysv, posixMqueues, ramFiles, keys].flatMap((part) => part.reasons);

  const misbehavior: MisbehaviorRecord[] =
    reasons.length === 0 ? [] : [createMisbehavior('UNRECLAIMABLE', reasons.join('; '))];
  return {
    uid,
    sysv: sysv.record,
    posixMqueues: posixMqueues.record,
    ramFiles: ramFiles.record,
    keys: keys.record,
    complete: reasons.length === 0,
    durationMs: Date.now() - start,
    misbehavior,
  };
}

/** The value of a settled sweep; its error, thrown, when it failed. */
function settledValue<T>(part: PromiseSettledResult<T>): T {
  if (part.status === 'rejected') throw part.reason;
  return part.value;
}
