// Disk quota for the student's writable places, enforced by the kernel: a preallocated ext4
// image (never sparse: a sparse image turns ENOSPC into I/O errors and lets the student fill
// the host's disk), loop-mounted, sized in bytes and inodes, its root owned by the student.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isErrno, parseMountInfo, parseOptions, resolveTrustedBinary, toSystemError } from '@karotte/base';
import { z } from 'zod';
import { DEFAULT_IMAGE_DIR, DEFAULT_QUOTA_POLL_MS, QUOTA_BLOCK_BYTES } from './constants.js';
import { runTrusted } from './exec.js';
import { LimitsError, throwIfAborted } from './errors.js';
import type { LimitEvent } from './events.js';
import { FirstSeen } from './events.js';
import type { GroupLimitReport } from './group.js';
import prepareScript from './programs/prepare-quota.sh?raw';
import { DEFAULT_DISK_BYTES, defaultDiskInodes, limitRules } from './spec.js';
import { ensureSafeDir, removeRecord, selfIdentity, writeRecord } from './state.js';

const absolutePath = z.string().startsWith('/').max(4096);
const id32 = z.number().int().min(0).max(4_294_967_294);

/**
 * Size options shared by {@link createQuota} and {@link createQuotaPool}: the bounds and
 * defaults of `studentLimitsSchema`'s `diskBytes` and `diskInodes`.
 */
const sizeShape = {
  /** Size of the image in bytes (rounded down to 4 KiB), 8 MiB to 1 PiB. The student can write a little less (ext4 metadata). @default DEFAULT_DISK_BYTES (1 GiB) */
  bytes: limitRules.diskBytes.default(DEFAULT_DISK_BYTES),
  /** Inodes (files, directories, symlinks) the student can create; ext4 may round up to fill a block. @default one per 16 KiB of bytes, at most DEFAULT_DISK_INODES (65536) */
  inodes: limitRules.diskInodes.optional(),
  /** Directory of images, mount points and owner records. @default DEFAULT_IMAGE_DIR ('/var/lib/karotte') */
  imageDir: absolutePath.default(DEFAULT_IMAGE_DIR),
};

/** Options of taking a prepared quota for one student. */
const acquireShape = {
  /** Owner of the quota's root directory (the student). */
  ownerUid: id32,
  /** Group of the root directory. @default ownerUid */
  ownerGid: id32.optional(),
  /** Mode of the root directory. @default 0o755 */
  mode: z.number().int().min(0).max(0o7777).default(0o755),
  /** Background check for a full quota, in ms (0: only when events() is called). @default DEFAULT_QUOTA_POLL_MS (1000) */
  pollMs: z.number().int().nonnegative().default(DEFAULT_QUOTA_POLL_MS),
  /** Cancels creation. */
  abortSignal: z.instanceof(AbortSignal).optional(),
};

/** The inode count a quota gets when none is given. */
function withInodes<T extends { bytes: number; inodes?: number | undefined }>(
  options: T,
): T & { inodes: number } {
  return { ...options, inodes: options.inodes ?? defaultDiskInodes(options.bytes) };
}

/** Options of {@link createQuota}. Strict. */
export const quotaOptionsSchema = z
  .object({ ...sizeShape, ...acquireShape })
  .strict()
  .transform(withInodes);
/** Options of {@link createQuota} as a caller writes them. */
export type QuotaOptions = z.input<typeof quotaOptionsSchema>;

/** Options of {@link QuotaPool.acquire}. Strict. */
export const quotaAcquireOptionsSchema = z.object(acquireShape).strict();
/** Options of {@link QuotaPool.acquire} as a caller writes them. */
export type QuotaAcquireOptions = z.input<typeof quotaAcquireOptionsSchema>;

/** Options of {@link createQuotaPool}. Strict. */
export const quotaPoolOptionsSchema = z
  .object({
    ...sizeShape,
    /** Prepared (formatted and mounted, not yet owned) images kept ready. @default 2 */
    size: z.number().int().min(1).max(32).default(2),
  })
  .strict()
  .transform(withInodes);
/** Options of {@link createQuotaPool} as a caller writes them. */
export type QuotaPoolOptions = z.input<typeof quotaPoolOptionsSchema>;

/** Bytes and inodes of a quota, from statfs. */
export interface QuotaUsage {
  readonly totalBytes: number;
  readonly usedBytes: number;
  /** Bytes the student can still write. */
  readonly freeBytes: number;
  readonly totalInodes: number;
  readonly usedInodes: number;
  readonly freeInodes: number;
}

/** What {@link Quota.remove} returns. */
export interface QuotaRemoval {
  /** Quota events read just before unmounting. */
  readonly events: LimitEvent[];
  /** True when the file system was busy and had to be detached lazily (it vanishes when its last user dies). */
  readonly lazy: boolean;
}

/** A mounted, kernel-enforced disk quota owned by one student. */
export interface Quota {
  readonly id: string;
  /** The mount point: the quota's root directory, owned by the student. */
  readonly path: string;
  /** The preallocated image file. */
  readonly image: string;
  /** The loop device the image is attached to. */
  readonly loopDevice: string;
  /** Image size and inode count asked for. */
  readonly imageBytes: number;
  /** The limits in force, from statfs of the mounted file system. */
  readonly limits: { readonly bytes: number; readonly inodes: number };
  readonly contracts: { readonly disk_bytes: GroupLimitReport; readonly disk_inodes: GroupLimitReport };
  usage(): QuotaUsage;
  /** `full` events since creation (checked now and by the background poll). */
  events(): LimitEvent[];
  /** Unmount, detach the loop device, delete the image, the mount point and the owner record. Idempotent. */
  remove(): Promise<QuotaRemoval>;
}

/** Paths of one image. */
interface ImagePaths {
  readonly id: string;
  readonly image: string;
  readonly mountPoint: string;
  readonly recordDir: string;
}

/** An image formatted, attached and mounted, root-owned 0700, not yet handed to a student. */
interface PreparedImage extends ImagePaths {
  readonly loopDevice: string;
  readonly bytes: number;
  readonly inodes: number;
}

/** Layout of an image directory. */
export function imageLayout(imageDir: string): { records: string; images: string; mounts: string } {
  return {
    records: path.join(imageDir, 'quotas'),
    images: path.join(imageDir, 'images'),
    mounts: path.join(imageDir, 'mnt'),
  };
}

function prepareDirs(imageDir: string): void {
  const layout = imageLayout(imageDir);
  // 0711: the student may traverse to its mount point (knowing the path) but list nothing.
  ensureSafeDir(imageDir, 0o711);
  ensureSafeDir(layout.records, 0o700);
  ensureSafeDir(layout.images, 0o700);
  ensureSafeDir(layout.mounts, 0o711);
}

/** True when `file` has at least `bytes` allocated (not sparse). */
function isPreallocated(file: string, bytes: number): boolean {
  const stat = fs.statSync(file);
  return stat.blocks * 512 >= bytes;
}

/** True when something is mounted exactly at `mountPoint`. */
export function isMounted(mountPoint: string): boolean {
  const mounts = parseMountInfo(fs.readFileSync('/proc/self/mountinfo', 'utf8')).entries;
  return mounts.some((mount) => mount.mountPoint === mountPoint);
}

/** Loop devices whose backing file is `image` (from /sys/block/loop*). */
export function loopDevicesBacking(image: string): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = fs.readdirSync('/sys/block');
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^loop\d+$/.test(name)) continue;
    try {
      const backing = fs.readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim();
      if (backing === image || backing === `${image} (deleted)`) out.push(`/dev/${name}`);
    } catch {
      // not attached
    }
  }
  return out;
}

/**
 * The constant script that prepares an image (programs/prepare-quota.sh). Positional
 * arguments: $1 fallocate, $2 mkfs.ext4, $3 mount (trusted absolute paths), $4 bytes, $5
 * inodes, $6 image, $7 mount point.
 *
 * - fallocate first: the image is preallocated, never sparse (a sparse image turns ENOSPC
 *   into I/O errors and lets the student fill the host's disk).
 * - mkfs.ext4 -E nodiscard: on a regular file mke2fs "discards" by punching holes, which
 *   would make the image sparse again. -m 0: no root reserve. -N: the inode quota. No
 *   journal, no resize inode: less metadata, faster mkfs and mount. lazy_itable_init (and
 *   noinit_itable at mount) skips zeroing inode tables: unwritten extents already read as zeros.
 * - fallocate again: where the host file system has no FALLOC_FL_ZERO_RANGE (tmpfs), mke2fs
 *   zeroes ranges by punching holes; holes read as zeros, so allocating them again keeps the
 *   file system intact and the image whole.
 * - mount -o loop: attaches a free loop device with autoclear (it detaches on unmount);
 *   nosuid, nodev: nothing the student writes there can gain privileges.
 */
const PREPARE_SCRIPT: string = prepareScript;

/** The source device of the mount at `mountPoint`, or null. */
function mountSource(mountPoint: string): string | null {
  const mounts = parseMountInfo(fs.readFileSync('/proc/self/mountinfo', 'utf8')).entries;
  return mounts.findLast((mount) => mount.mountPoint === mountPoint)?.source ?? null;
}

/** Format, attach and mount a fresh preallocated image. Cleans up everything on failure. */
async function prepareImage(
  imageDir: string,
  bytes: number,
  inodes: number,
  abortSignal: AbortSignal | undefined,
): Promise<PreparedImage> {
  throwIfAborted(abortSignal);
  prepareDirs(imageDir);
  const layout = imageLayout(imageDir);
  const id = `karotte-${process.pid}-${crypto.randomBytes(6).toString('hex')}`;
  const paths: ImagePaths = {
    id,
    image: path.join(layout.images, `${id}.img`),
    mountPoint: path.join(layout.mounts, id),
    recordDir: layout.records,
  };
  const blockAligned = Math.floor(bytes / QUOTA_BLOCK_BYTES) * QUOTA_BLOCK_BYTES;
  // The record first: a harness killed at any later line leaves enough to reclaim everything.
  writeRecord(
    layout.records,
    id,
    {
      kind: 'quota',
      format: 1,
      id,
      owner: selfIdentity(),
      createdAtMs: Date.now(),
      phase: 'preparing',
      image: paths.image,
      mountPoint: paths.mountPoint,
    },
    true,
  );
  try {
    fs.closeSync(fs.openSync(paths.image, 'wx', 0o600));
    fs.mkdirSync(paths.mountPoint, { mode: 0o700 });
    // One process for the four steps (spawning is the slow part of this path).
    await runTrusted(
      'sh',
      [
        '-c',
        PREPARE_SCRIPT,
        'karotte-prepare-quota',
        resolveTrustedBinary('fallocate'),
        resolveTrustedBinary('mkfs.ext4'),
        resolveTrustedBinary('mount'),
        String(blockAligned),
        String(inodes),
        paths.image,
        paths.mountPoint,
      ],
      { code: 'QUOTA_FAILED', abortSignal },
    );
    if (!isPreallocated(paths.image, blockAligned)) {
      throw new LimitsError('QUOTA_FAILED', `${paths.image} is sparse after preparation`, {
        path: paths.image,
      });
    }
    const loopDevice = mountSource(paths.mountPoint);
    if (loopDevice === null || !/^\/dev\/loop\d+$/.test(loopDevice)) {
      throw new LimitsError('QUOTA_FAILED', `${paths.mountPoint} is not mounted from a loop device`, {
        path: paths.mountPoint,
      });
    }
    fs.rmdirSync(path.join(paths.mountPoint, 'lost+found'));
    fs.chmodSync(paths.mountPoint, 0o700);
    writeRecord(layout.records, id, {
      kind: 'quota',
      format: 1,
      id,
      owner: selfIdentity(),
      createdAtMs: Date.now(),
      phase: 'ready',
      image: paths.image,
      mountPoint: paths.mountPoint,
    });
    return { ...paths, loopDevice, bytes: blockAligned, inodes };
  } catch (error) {
    try {
      await teardownImage(paths.image, paths.mountPoint);
      removeRecord(layout.records, id);
    } catch {
      // the record stays; recoverLimitLeftovers() retries
    }
    throw error instanceof LimitsError ? error : toSystemError(error, `preparing quota image ${paths.image}`);
  }
}

/**
 * Unmount `mountPoint`, detach every loop device backed by `image`, delete both. Tolerates
 * any step already done. A busy file system is detached lazily (returns `lazy: true`).
 */
export async function teardownImage(image: string, mountPoint: string): Promise<{ lazy: boolean }> {
  let lazy = false;
  if (isMounted(mountPoint)) {
    const plain = await runTrusted('umount', [mountPoint], { code: 'QUOTA_FAILED' }).then(
      () => null,
      (error: unknown) => error,
    );
    if (plain !== null && isMounted(mountPoint)) {
      // Busy (a process still holds a file): detach now; the kernel frees it when the last user goes.
      await runTrusted('umount', ['-l', mountPoint], { code: 'QUOTA_FAILED' });
      lazy = true;
    }
  }
  // The mount point goes first. Another mount namespace made while this file system was
  // mounted (a neighbour's sandbox, a warm pool's) holds a copy of the mount, hidden under its
  // covers, which keeps the file system and its loop device alive for that namespace's life.
  // Removing the directory detaches every mount on it in every namespace (Linux 3.18+), so the
  // file system goes now and autoclear detaches the loop device.
  removeMountPoint(mountPoint);
  // mount -o loop set autoclear: the loop device goes with the unmount. Give the kernel a
  // moment before detaching by hand (a record from a crash may name a device without it).
  for (let wait = 0; wait < 20 && loopDevicesBacking(image).length > 0 && !lazy; wait += 1) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  for (const device of loopDevicesBacking(image)) {
    // On a busy device the kernel sets autoclear instead: it detaches when the last user goes.
    const detach = await runTrusted('losetup', ['-d', device], { code: 'QUOTA_FAILED' }).then(
      () => null,
      (error: unknown) => error,
    );
    if (detach instanceof LimitsError && !lazy && loopDevicesBacking(image).includes(device)) throw detach;
  }
  try {
    fs.unlinkSync(image);
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) throw toSystemError(error, `removing quota image ${image}`);
  }
  if (isMounted(mountPoint) || fs.existsSync(image)) {
    throw new LimitsError('QUOTA_FAILED', `quota ${image} is still present after teardown`, { path: image });
  }
  return { lazy };
}

function removeMountPoint(mountPoint: string): void {
  try {
    fs.rmdirSync(mountPoint);
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) throw toSystemError(error, `removing mount point ${mountPoint}`);
  }
}

/** Hand a prepared image to a student: chown and chmod its root, record it as in use. */
function acquireImage(prepared: PreparedImage, options: z.output<typeof quotaAcquireOptionsSchema>): Quota {
  fs.chownSync(prepared.mountPoint, options.ownerUid, options.ownerGid ?? options.ownerUid);
  fs.chmodSync(prepared.mountPoint, options.mode);
  writeRecord(prepared.recordDir, prepared.id, {
    kind: 'quota',
    format: 1,
    id: prepared.id,
    owner: selfIdentity(),
    createdAtMs: Date.now(),
    phase: 'in_use',
    image: prepared.image,
    mountPoint: prepared.mountPoint,
  });
  return new LoopQuota(prepared, options.pollMs);
}

/**
 * Create a quota without a pool: preallocate, format, attach, mount, hand to the student.
 * Throws LimitsError (`QUOTA_FAILED`, `UNSAFE_STATE_DIR`, `ABORTED`) or BadArgumentError.
 */
export async function createQuota(options: QuotaOptions): Promise<Quota> {
  const parsed = parseOptions(quotaOptionsSchema, options, 'quota options');
  const prepared = await prepareImage(parsed.imageDir, parsed.bytes, parsed.inodes, parsed.abortSignal);
  try {
    return acquireImage(prepared, parsed);
  } catch (error) {
    await teardownImage(prepared.image, prepared.mountPoint);
    removeRecord(prepared.recordDir, prepared.id);
    throw error instanceof LimitsError ? error : toSystemError(error, 'handing a quota to its owner');
  }
}

/**
 * Free bytes below which a quota counts as full. ext4 refuses a write that needs more
 * clusters than are free (a 1 MiB write fails with up to ~1 MiB still free), so "full" is
 * "less than one typical write left", not "zero".
 */
const QUOTA_FULL_SLACK_BYTES = 1024 * 1024;

class LoopQuota implements Quota {
  readonly id: string;
  readonly path: string;
  readonly image: string;
  readonly loopDevice: string;
  readonly imageBytes: number;
  readonly limits: Quota['limits'];
  readonly contracts: Quota['contracts'];
  private readonly recordDir: string;
  private readonly firstSeen = new FirstSeen();
  private readonly seenEvents = new Map<string, LimitEvent>();
  private timer: NodeJS.Timeout | null = null;
  private removal: Promise<QuotaRemoval> | null = null;

  constructor(prepared: PreparedImage, pollMs: number) {
    this.id = prepared.id;
    this.path = prepared.mountPoint;
    this.image = prepared.image;
    this.loopDevice = prepared.loopDevice;
    this.imageBytes = prepared.bytes;
    this.recordDir = prepared.recordDir;
    const usage = this.usage();
    this.limits = { bytes: usage.totalBytes, inodes: usage.totalInodes };
    this.contracts = {
      disk_bytes: {
        contract: 'prevented',
        mechanism: 'preallocated ext4 image on a loop device',
        reason: `${usage.freeBytes} bytes writable (image ${prepared.bytes} bytes, not sparse)`,
      },
      disk_inodes: {
        contract: 'prevented',
        mechanism: 'ext4 inode count (mkfs.ext4 -N)',
        reason: `${usage.freeInodes} inodes free`,
      },
    };
    if (pollMs > 0) {
      this.timer = setInterval(() => {
        try {
          this.check();
        } catch {
          // unmounted under us: remove() reports
        }
      }, pollMs);
      this.timer.unref();
    }
  }

  usage(): QuotaUsage {
    const stat = fs.statfsSync(this.path);
    return {
      totalBytes: stat.blocks * stat.bsize,
      usedBytes: (stat.blocks - stat.bfree) * stat.bsize,
      freeBytes: stat.bavail * stat.bsize,
      totalInodes: stat.files,
      usedInodes: stat.files - stat.ffree,
      freeInodes: stat.ffree,
    };
  }

  private check(): void {
    const stat = fs.statfsSync(this.path);
    const nowMs = Date.now();
    if (stat.bavail * stat.bsize < QUOTA_FULL_SLACK_BYTES && !this.seenEvents.has('disk_bytes')) {
      this.seenEvents.set('disk_bytes', {
        limit: 'disk_bytes',
        kind: 'full',
        count: 1,
        atMs: this.firstSeen.at('disk_bytes', nowMs),
        observed: (stat.blocks - stat.bfree) * stat.bsize,
        limitValue: this.limits.bytes,
        source: 'statfs',
      });
    }
    if (stat.ffree === 0 && !this.seenEvents.has('disk_inodes')) {
      this.seenEvents.set('disk_inodes', {
        limit: 'disk_inodes',
        kind: 'full',
        count: 1,
        atMs: this.firstSeen.at('disk_inodes', nowMs),
        observed: stat.files - stat.ffree,
        limitValue: this.limits.inodes,
        source: 'statfs',
      });
    }
  }

  events(): LimitEvent[] {
    if (this.removal === null) this.check();
    return [...this.seenEvents.values()];
  }

  remove(): Promise<QuotaRemoval> {
    // A failed removal can be retried: forget it, so the next call tries again.
    this.removal ??= this.doRemove().catch((error: unknown) => {
      this.removal = null;
      throw error;
    });
    return this.removal;
  }

  private async doRemove(): Promise<QuotaRemoval> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    try {
      this.check();
    } catch {
      // already unmounted
    }
    const events = [...this.seenEvents.values()];
    const { lazy } = await teardownImage(this.image, this.path);
    removeRecord(this.recordDir, this.id);
    return { events, lazy };
  }
}

/** A pool of prepared quota images, refilled in the background. */
export interface QuotaPool {
  readonly bytes: number;
  readonly inodes: number;
  readonly size: number;
  /** Take a prepared image (or make one when none is ready) and hand it to a student. */
  acquire(options: QuotaAcquireOptions): Promise<Quota>;
  /** Prepared images ready now. */
  available(): number;
  /** Resolves when the pool holds `size` prepared images (or a refill failed: the error is kept in `lastError`). */
  filled(): Promise<void>;
  /** The last refill failure, if any. */
  readonly lastError: unknown;
  /** Stop refilling and remove every prepared image. */
  close(): Promise<void>;
}

/**
 * A pool of prepared images: formatting, attaching and mounting happen ahead of time, so
 * handing a quota to an episode is a chown and a record write. Refills one image at a time in
 * the background. Every prepared image has an owner record, so a crash loses nothing.
 */
export function createQuotaPool(options: QuotaPoolOptions = {}): QuotaPool {
  const parsed = parseOptions(quotaPoolOptionsSchema, options, 'quota pool options');
  prepareDirs(parsed.imageDir);
  return new PreparedPool(parsed);
}

class PreparedPool implements QuotaPool {
  readonly bytes: number;
  readonly inodes: number;
  readonly size: number;
  lastError: unknown = undefined;
  private readonly ready: PreparedImage[] = [];
  private inflight: Promise<void> | null = null;
  private closed = false;
  private waiters: (() => void)[] = [];

  constructor(private readonly options: z.output<typeof quotaPoolOptionsSchema>) {
    this.bytes = options.bytes;
    this.inodes = options.inodes;
    this.size = options.size;
    this.refill();
  }

  available(): number {
    return this.ready.length;
  }

  private refill(): void {
    if (this.closed || this.inflight !== null) return;
    if (this.ready.length >= this.size) {
      this.wake();
      return;
    }
    this.inflight = prepareImage(this.options.imageDir, this.options.bytes, this.options.inodes, undefined)
      .then(
        (image) => {
          if (this.closed) {
            return teardownImage(image.image, image.mountPoint).then(() => {
              removeRecord(image.recordDir, image.id);
            });
          }
          this.ready.push(image);
          this.lastError = undefined;
          return undefined;
        },
        (error: unknown) => {
          // Stop refilling after a failure (no hot loop); the next acquire tries again.
          this.lastError = error;
          this.wake();
        },
      )
      .finally(() => {
        this.inflight = null;
        if (this.lastError === undefined) this.refill();
      });
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  filled(): Promise<void> {
    if (this.ready.length >= this.size || this.lastError !== undefined || this.closed)
      return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async acquire(options: QuotaAcquireOptions): Promise<Quota> {
    if (this.closed) throw new LimitsError('REMOVED', 'the quota pool is closed');
    const parsed = parseOptions(quotaAcquireOptionsSchema, options, 'quota acquire options');
    const taken = this.ready.shift();
    this.lastError = undefined;
    // Refill after this acquire returns: preparing starts with a synchronous, durable record
    // write that the caller should not wait for.
    setImmediate(() => {
      this.refill();
    });
    const prepared =
      taken ??
      (await prepareImage(
        this.options.imageDir,
        this.options.bytes,
        this.options.inodes,
        parsed.abortSignal,
      ));
    try {
      return acquireImage(prepared, parsed);
    } catch (error) {
      await teardownImage(prepared.image, prepared.mountPoint);
      removeRecord(prepared.recordDir, prepared.id);
      throw error instanceof LimitsError ? error : toSystemError(error, 'handing a quota to its owner');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake();
    if (this.inflight !== null) await this.inflight;
    const errors: unknown[] = [];
    for (const image of this.ready.splice(0)) {
      try {
        await teardownImage(image.image, image.mountPoint);
        removeRecord(image.recordDir, image.id);
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) {
      throw new LimitsError('QUOTA_FAILED', `${errors.length} prepared image(s) could not be removed`, {
        cause: errors[0],
      });
    }
  }
}
