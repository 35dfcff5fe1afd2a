// reclaim(uid): delete what a uid owns under given roots, never following a link, never
// leaving the roots, never crossing excluded trees, bounded in time.
import fs from 'node:fs';
import type { MisbehaviorRecord } from '@karotte/base';
import { BadArgumentError, createMisbehavior, escapeForDisplay, parseOptions } from '@karotte/base';
import {
  DIR_FLAGS,
  closeQuietly,
  errnoOf,
  fdPath,
  lstatAt,
  openAt,
  readDirAt,
  rmdirAt,
  unlinkAt,
} from './fd-path.js';
import type { DirEntry } from './fd-path.js';
import { FileGuardError } from './errors.js';
import { reclaimOptionsSchema } from './options.js';
import type { ReclaimOptions } from './options.js';
import { REOPEN_DIR_FLAGS, openAbsoluteDirectory, procSelfFdWorks } from './walk.js';
import { Scheduler } from './yield.js';

/** One path reclaim could not remove (or could not prove is not the uid's). */
export interface ReclaimFailure {
  /** Absolute path, escaped for display. */
  readonly path: string;
  /** errno code (`EBUSY`, `EACCES`, ...) or a short description. */
  readonly reason: string;
}

/** What {@link reclaim} did. */
export interface ReclaimResult {
  /** Every root swept to the end, nothing failed, no timeout. */
  readonly complete: boolean;
  /** Files, links, special files and directories of the uid removed. */
  readonly removed: number;
  /** The uid's directories kept because they still hold other owners' or excluded entries. */
  readonly keptNonEmpty: number;
  /** The first `maxReportedFailures` failures. */
  readonly failed: readonly ReclaimFailure[];
  /** All failures, counted. */
  readonly failedCount: number;
  /** The sweep gave up at `timeoutMs`. */
  readonly timedOut: boolean;
  /** Mount points (and virtual or read-only filesystems) not descended into, escaped (first 100). */
  readonly skippedMounts: readonly string[];
  /** Roots that do not exist (skipped, not a failure). */
  readonly missingRoots: readonly string[];
  readonly durationMs: number;
  /** `UNRECLAIMABLE` when the sweep is not complete; undefined otherwise. */
  readonly misbehavior: MisbehaviorRecord | undefined;
}

/** statfs magic numbers of virtual filesystems a sweep never enters when crossing mounts. */
const VIRTUAL_FS_TYPES: ReadonlySet<number> = new Set([
  0x9fa0, // proc
  0x62656572, // sysfs
  0x27e0eb, // cgroup
  0x63677270, // cgroup2
  0x1cd1, // devpts
  0x64626720, // debugfs
  0x74726163, // tracefs
  0x73636673, // securityfs
  0xcafe4a11, // bpf
  0x19800202, // mqueue
  0x62656570, // configfs
  0x65735543, // fusectl
  0x6165676c, // pstore
  0xf97cff8c, // selinuxfs
  0xde5e81e4, // efivarfs
  0x42494e4d, // binfmt_misc
  0x6e736673, // nsfs
  0x0187, // autofs
]);

/** How many directory descriptors stay open along the current path before older ones are closed. */
const FD_WINDOW = 64;
/**
 * Names listed per directory at a time: a directory with millions of entries costs bounded
 * memory. After a batch the directory is listed again (removed names are gone), as long as
 * the previous batch removed something.
 */
const LIST_BATCH = 65_536;
const MAX_SKIPPED_REPORTED = 100;

interface Frame {
  fd: number;
  readonly dev: bigint;
  readonly ino: bigint;
  readonly mntId: number | undefined;
  readonly path: Buffer;
  /** Name in the parent (undefined for a root). */
  readonly name: Buffer | undefined;
  /** The current batch of names (at most LIST_BATCH). */
  entries: DirEntry[];
  index: number;
  /** The directory had more names than this batch: list it again once the batch is done. */
  more: boolean;
  /** Entries removed since this batch was listed (a re-list without progress stops). */
  removedInBatch: number;
  /** Remove this directory once emptied. */
  readonly removable: boolean;
}

/** The mount id of what `fd` refers to, from /proc/self/fdinfo. */
function mountIdOf(fd: number): number | undefined {
  try {
    const text = fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1');
    const match = /^mnt_id:\s*(\d+)/m.exec(text);
    return match === null ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

function isUnder(pathBytes: Buffer, prefix: Buffer): boolean {
  return (
    pathBytes.length > prefix.length &&
    pathBytes[prefix.length] === 0x2f &&
    pathBytes.compare(prefix, 0, prefix.length, 0, prefix.length) === 0
  );
}

/**
 * Delete every file, link, special file and directory owned by `uid` under `roots`.
 *
 * The walk is descriptor-relative (`/proc/self/fd/<dir>/<name>`): each directory is opened
 * with O_NOFOLLOW|O_DIRECTORY and its (dev, ino) checked against the lstat that chose it;
 * links are removed as links, never followed; a directory that is a mount point (its mount
 * id differs from its parent's) is not entered unless `crossMounts`, and never removed;
 * excluded subtrees and the directories leading to them are kept. Descriptors along deep
 * paths are recycled (the walk climbs back through `..` and re-verifies (dev, ino)), so
 * depth is bounded by time, not by file descriptors or PATH_MAX.
 *
 * Failures (an entry it cannot stat or remove) are data: the result lists them and carries an
 * `UNRECLAIMABLE` misbehavior record. Only caller mistakes and a missing /proc throw.
 *
 * @throws BadArgumentError for uid 0, a system uid without `allowSystemUid`, or bad options.
 * @throws FileGuardError `ABORTED` when `abortSignal` fires; `PROC_UNAVAILABLE`.
 */
export async function reclaim(uid: number, options: ReclaimOptions): Promise<ReclaimResult> {
  const parsed = parseOptions(reclaimOptionsSchema, options, 'reclaim options');
  if (!Number.isInteger(uid) || uid < 0 || uid > 4_294_967_294) {
    throw new BadArgumentError(`uid must be an integer uid, got ${String(uid)}`, { field: 'uid' });
  }
  if (uid === 0) throw new BadArgumentError('refusing to reclaim the files of uid 0', { field: 'uid' });
  if (uid < 1000 && !parsed.allowSystemUid) {
    throw new BadArgumentError(`refusing to reclaim the files of system uid ${uid} without allowSystemUid`, {
      field: 'uid',
    });
  }
  const started = performance.now();
  const deadline = started + parsed.timeoutMs;
  const scheduler = new Scheduler(parsed.abortSignal);
  scheduler.checkAbort();

  const excludes = parsed.exclude.map((value) => Buffer.from(value));
  const isExcluded = (p: Buffer): boolean => excludes.some((ex) => ex.equals(p) || isUnder(p, ex));
  const leadsToExclude = (p: Buffer): boolean =>
    excludes.some((ex) => isUnder(ex, p) || (p.length === 1 && p[0] === 0x2f && ex.length > 1));

  let removed = 0;
  let keptNonEmpty = 0;
  let failedCount = 0;
  let timedOut = false;
  const failed: ReclaimFailure[] = [];
  const skippedMounts: string[] = [];
  const missingRoots: string[] = [];

  const fail = (p: Buffer, reason: string): void => {
    failedCount += 1;
    if (failed.length < parsed.maxReportedFailures) failed.push({ path: escapeForDisplay(p), reason });
  };
  const skipMount = (p: Buffer): void => {
    if (skippedMounts.length < MAX_SKIPPED_REPORTED) skippedMounts.push(escapeForDisplay(p));
  };

  const stack: Frame[] = [];
  const closeAll = (): void => {
    for (const frame of stack.splice(0)) closeQuietly(frame.fd);
  };

  try {
    rootLoop: for (const root of parsed.roots) {
      const rootBytes = Buffer.from(root);
      if (isExcluded(rootBytes)) continue;
      const opened = openAbsoluteDirectory(rootBytes, true);
      if (!opened.ok) {
        if (opened.failure.kind === 'missing') missingRoots.push(escapeForDisplay(rootBytes));
        else
          fail(
            rootBytes,
            opened.failure.kind === 'error' ? (opened.failure.errno ?? 'error') : opened.failure.kind,
          );
        continue;
      }
      if (!procSelfFdWorks(opened.fd)) {
        closeQuietly(opened.fd);
        throw new FileGuardError(
          'PROC_UNAVAILABLE',
          '/proc/self/fd does not resolve to this process: mount /proc',
        );
      }
      const rootStats = fs.fstatSync(opened.fd, { bigint: true });
      const rootListing = readDirAt(opened.fd, LIST_BATCH);
      stack.push({
        fd: opened.fd,
        dev: rootStats.dev,
        ino: rootStats.ino,
        mntId: mountIdOf(opened.fd),
        path: rootBytes,
        name: undefined,
        entries: rootListing.entries.slice(0, LIST_BATCH),
        index: 0,
        more: rootListing.overflow,
        removedInBatch: 0,
        removable: false,
      });

      while (stack.length > 0) {
        if (performance.now() > deadline) {
          timedOut = true;
          break rootLoop;
        }
        await scheduler.maybeYield();
        const top = stack[stack.length - 1]!;
        if (top.index >= top.entries.length && top.more && top.removedInBatch > 0) {
          try {
            const listing = readDirAt(top.fd, LIST_BATCH);
            top.entries = listing.entries.slice(0, LIST_BATCH);
            top.more = listing.overflow;
          } catch (error) {
            fail(top.path, errnoOf(error) ?? 'readdir failed');
            top.entries = [];
            top.more = false;
          }
          top.index = 0;
          top.removedInBatch = 0;
          continue;
        }
        if (top.index >= top.entries.length && top.more) {
          // A full batch of names none of which could be removed: the rest is out of reach.
          fail(top.path, `more than ${LIST_BATCH} entries not removable; the rest was not swept`);
          top.more = false;
        }
        if (top.index >= top.entries.length) {
          // Done with this directory: make sure the parent's descriptor is open (climbing
          // through `..` and re-verifying it when the window closed it), then remove it.
          stack.pop();
          const parent = stack[stack.length - 1];
          if (parent !== undefined && parent.fd < 0 && !reopenParent(parent, top)) {
            fail(parent.path, 'directory moved during sweep');
            closeQuietly(top.fd);
            abandonClosedFrames(stack);
            continue;
          }
          closeQuietly(top.fd);
          if (parent !== undefined && top.removable && top.name !== undefined) {
            try {
              rmdirAt(parent.fd, top.name);
              removed += 1;
              parent.removedInBatch += 1;
            } catch (error) {
              const errno = errnoOf(error);
              if (errno === 'ENOTEMPTY' || errno === 'EEXIST') keptNonEmpty += 1;
              else if (errno === 'EROFS') skipMount(top.path);
              else if (errno !== 'ENOENT') fail(top.path, errno ?? 'rmdir failed');
            }
          }
          continue;
        }
        const entry = top.entries[top.index]!;
        top.index += 1;
        const childPath = Buffer.concat([
          top.path.length === 1 ? Buffer.alloc(0) : top.path,
          Buffer.from('/'),
          entry.name,
        ]);
        if (isExcluded(childPath)) continue;
        let stats: fs.BigIntStats;
        try {
          stats = lstatAt(top.fd, entry.name);
        } catch (error) {
          const errno = errnoOf(error);
          if (errno !== 'ENOENT') fail(childPath, errno ?? 'lstat failed');
          continue;
        }
        const owned = Number(stats.uid) === uid;
        if (!stats.isDirectory()) {
          if (!owned) continue;
          try {
            unlinkAt(top.fd, entry.name);
            removed += 1;
            top.removedInBatch += 1;
          } catch (error) {
            const errno = errnoOf(error);
            if (errno === 'EROFS') skipMount(childPath);
            else if (errno !== 'ENOENT') fail(childPath, errno ?? 'unlink failed');
          }
          continue;
        }
        if (stats.dev !== top.dev && !parsed.crossMounts) {
          // The root of another file system, known from its lstat: skipped without opening it,
          // since a descriptor on it, however brief, makes its unmount fail (busy).
          skipMount(childPath);
          continue;
        }
        let childFd: number;
        try {
          childFd = openAt(top.fd, entry.name, DIR_FLAGS);
        } catch (error) {
          const errno = errnoOf(error);
          if (errno !== 'ENOENT')
            fail(childPath, errno === 'ENOTDIR' ? 'changed during sweep' : (errno ?? 'open failed'));
          continue;
        }
        const childStats = fs.fstatSync(childFd, { bigint: true });
        if (childStats.dev !== stats.dev || childStats.ino !== stats.ino) {
          // What was looked at is not what was opened. A mount made or removed on that name in
          // between (another episode setting up or tearing down its world) does this with no
          // trick involved: look again, and go on when the name now shows what is open.
          let again: fs.BigIntStats | undefined;
          try {
            again = lstatAt(top.fd, entry.name);
          } catch {
            again = undefined;
          }
          if (again === undefined || again.dev !== childStats.dev || again.ino !== childStats.ino) {
            closeQuietly(childFd);
            fail(childPath, 'changed during sweep');
            continue;
          }
          stats = again;
        }
        if (stack.some((frame) => frame.dev === childStats.dev && frame.ino === childStats.ino)) {
          closeQuietly(childFd); // a bind mount looping back to an ancestor
          skipMount(childPath);
          continue;
        }
        const childMnt = mountIdOf(childFd);
        const isMountPoint = childStats.dev !== top.dev || (childMnt !== undefined && childMnt !== top.mntId);
        if (isMountPoint) {
          if (!parsed.crossMounts || isVirtualFs(childFd)) {
            closeQuietly(childFd);
            skipMount(childPath);
            continue;
          }
        }
        let listing: { entries: DirEntry[]; overflow: boolean };
        try {
          listing = readDirAt(childFd, LIST_BATCH);
        } catch (error) {
          closeQuietly(childFd);
          fail(childPath, errnoOf(error) ?? 'readdir failed');
          continue;
        }
        stack.push({
          fd: childFd,
          dev: childStats.dev,
          ino: childStats.ino,
          mntId: childMnt,
          path: childPath,
          name: entry.name,
          entries: listing.entries.slice(0, LIST_BATCH),
          index: 0,
          more: listing.overflow,
          removedInBatch: 0,
          // Owner read from the open directory itself: what will be emptied and removed.
          removable: Number(childStats.uid) === uid && !isMountPoint && !leadsToExclude(childPath),
        });
        // Keep at most FD_WINDOW descriptors open along the path.
        const old = stack[stack.length - 1 - FD_WINDOW];
        if (old !== undefined && old.fd >= 0) {
          closeQuietly(old.fd);
          old.fd = -1;
        }
      }
    }
  } finally {
    closeAll();
  }

  const durationMs = performance.now() - started;
  const complete = !timedOut && failedCount === 0;
  let misbehavior: MisbehaviorRecord | undefined;
  if (timedOut) {
    misbehavior = createMisbehavior(
      'UNRECLAIMABLE',
      `sweeping what uid ${uid} owns took longer than ${parsed.timeoutMs} ms; removed ${removed} entries before giving up`,
    );
  } else if (failedCount > 0) {
    misbehavior = createMisbehavior(
      'UNRECLAIMABLE',
      `could not remove ${failedCount} path(s) owned by uid ${uid}: ${failed
        .slice(0, 10)
        .map((f) => `${f.path} (${f.reason})`)
        .join(', ')}`,
    );
  }
  return {
    complete,
    removed,
    keptNonEmpty,
    failed,
    failedCount,
    timedOut,
    skippedMounts,
    missingRoots,
    durationMs,
    misbehavior,
  };
}

function isVirtualFs(fd: number): boolean {
  try {
    return VIRTUAL_FS_TYPES.has(fs.statfsSync(fdPath(fd)).type);
  } catch {
    return true; // cannot tell: do not enter
  }
}

/** Reopen `parent` through `child`'s `..` and verify it is the directory recorded. */
function reopenParent(parent: Frame, child: Frame): boolean {
  if (child.fd < 0) return false;
  let fd: number;
  try {
    fd = fs.openSync(Buffer.concat([fdPath(child.fd), Buffer.from('/..')]), REOPEN_DIR_FLAGS);
  } catch {
    return false;
  }
  const stats = fs.fstatSync(fd, { bigint: true });
  if (stats.dev !== parent.dev || stats.ino !== parent.ino) {
    closeQuietly(fd);
    return false;
  }
  parent.fd = fd;
  return true;
}

/** After a failed climb, drop every frame whose descriptor is closed (their subtrees are abandoned). */
function abandonClosedFrames(stack: Frame[]): void {
  while (stack.length > 0 && stack[stack.length - 1]!.fd < 0) stack.pop();
}
