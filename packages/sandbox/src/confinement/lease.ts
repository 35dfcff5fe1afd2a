import { randomBytes } from 'node:crypto';
import {
  closeSync,
  linkSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  constants,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import {
  bootId,
  hasSubordinateConflict,
  identityOf,
  isSameProcessAlive,
  processesOfUid,
  readAccountIds,
  readProcessStat,
  readSubordinateIds,
} from '@karotte/base';
import type { SubordinateRange } from '@karotte/base';
import { SandboxError } from '../errors.js';
import { ensureRootOnlyDir } from '../state-dir.js';

/** The record in a uid lock file: who holds the uid, so a dead holder's leftovers can be reclaimed. */
export const leaseRecordSchema = z
  .object({
    uid: z.number().int().nonnegative(),
    sandboxId: z.string().regex(/^[a-z0-9-]+$/),
    ownerPid: z.number().int().positive(),
    ownerStartTime: z.number().int().nonnegative(),
    bootId: z.string(),
    createdAt: z.string(),
  })
  .strict();
export type LeaseRecord = z.infer<typeof leaseRecordSchema>;

/** One uid held by this process until `release()`. */
export interface IdentityLease {
  readonly uid: number;
  readonly gid: number;
  readonly sandboxId: string;
  readonly lockPath: string;
  /** Remove the lock file. Idempotent. Call only after everything of the uid is reclaimed. */
  release(): void;
}

export interface AllocateOptions {
  /** Root-only directory of the lock files (`<uid>.lock`), one per uid in use; created when missing. */
  readonly lockDir: string;
  readonly firstUid: number;
  readonly count: number;
  readonly sandboxId: string;
  /** Clean up after a dead holder before its uid is reused (processes, mounts, netns, ...). */
  readonly reclaim: (record: LeaseRecord | undefined, uid: number) => Promise<void>;
  /** Subordinate id files (`owner:start:count` lines). @default ['/etc/subuid', '/etc/subgid'] */
  readonly subordinateIdFiles?: readonly string[];
}

function lockPath(lockDir: string, uid: number): string {
  return path.join(lockDir, `${uid}.lock`);
}

/** Read a lock; undefined when it is missing or unreadable (a torn write by a killed harness). */
function readLease(file: string): LeaseRecord | undefined {
  try {
    // eslint-disable-next-line no-restricted-syntax -- root-only file written by this package, validated by the schema
    const parsed = leaseRecordSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when the lease's owner is gone: another boot, a dead pid, or a pid reused by another
 * process (start time differs). A lock we cannot parse is stale too, but only once it is old
 * enough that its writer cannot still be writing it.
 */
function isLeaseStale(record: LeaseRecord | undefined, currentBoot: string): boolean {
  if (record === undefined) return true;
  if (record.bootId !== currentBoot) return true;
  return !isSameProcessAlive({
    pid: record.ownerPid,
    startTicks: record.ownerStartTime,
    bootId: record.bootId,
  });
}

/** One lock file of a lock directory. */
export interface LeaseFile {
  readonly uid: number;
  readonly file: string;
  readonly record: LeaseRecord | undefined;
  /** Its holder is gone (another boot, a dead or reused pid, an unreadable record). */
  readonly stale: boolean;
}

/** Every lease in a lock directory, with whether its holder is gone. */
export function listLeaseFiles(lockDir: string): LeaseFile[] {
  const dir = lockDir;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const boot = bootId();
  const out = [];
  for (const name of names) {
    const match = /^(\d+)\.lock$/.exec(name);
    if (!match) continue;
    const file = path.join(dir, name);
    const record = readLease(file);
    out.push({ uid: Number(match[1]), file, record, stale: isLeaseStale(record, boot) });
  }
  return out;
}

/** An unreadable lock is taken over only after this long (no live writer takes that long). */
const UNREADABLE_LOCK_AGE_MS = 60_000;

function isOldEnough(file: string): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs > UNREADABLE_LOCK_AGE_MS;
  } catch {
    return false;
  }
}

/**
 * Take over a stale lock exactly once across processes: rename it aside (only one renamer
 * wins, the source is gone for the others), reclaim what its dead owner left, then delete it.
 */
export async function reclaimStaleLease(
  lockDir: string,
  uid: number,
  reclaim: AllocateOptions['reclaim'],
): Promise<boolean> {
  const file = lockPath(lockDir, uid);
  const record = readLease(file);
  if (!isLeaseStale(record, bootId())) return false;
  if (record === undefined && !isOldEnough(file)) {
    // Locks appear whole (see allocateIdentity); an unreadable one comes from a crash of an
    // older writer or a damaged disk. Only an old one is taken over, never one being written.
    return false;
  }
  const aside = `${file}.reclaim-${process.pid}`;
  try {
    renameSync(file, aside);
  } catch {
    return false; // someone else took it
  }
  try {
    await reclaim(record, uid);
  } catch (error) {
    // Put it back so the next start retries; never hand out a uid we could not clean.
    try {
      renameSync(aside, file);
    } catch {
      // keep aside; reclaim of aside files happens in reclaimAll
    }
    throw error;
  }
  rmSync(aside, { force: true });
  return true;
}

/** Drafts of lock files (see allocateIdentity) whose writer died between two lines. */
function removeOrphanDrafts(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const match = /^\d+\.lock\.draft-(\d+)-[0-9a-f]+$/.exec(name);
    if (match === null || readProcessStat(Number(match[1])) !== undefined) continue;
    rmSync(path.join(dir, name), { force: true });
  }
}

/**
 * Allocate a fresh uid/gid (the same number) from the reserved range: a lock file created with
 * O_EXCL holds it across processes. A uid named in /etc/passwd or /etc/group, one that owns
 * or lies in a subordinate id range (/etc/subuid, /etc/subgid), or one with live processes,
 * is never handed out. Stale locks met on the way are reclaimed first.
 */
export async function allocateLease(options: AllocateOptions): Promise<IdentityLease> {
  const { lockDir, firstUid, count, sandboxId } = options;
  ensureRootOnlyDir(lockDir);
  removeOrphanDrafts(lockDir);
  let taken: Set<number>;
  let subordinate: SubordinateRange[];
  try {
    taken = await readAccountIds();
    subordinate = await readSubordinateIds(options.subordinateIdFiles);
  } catch (error) {
    throw new SandboxError('SETUP_FAILED', `cannot read the host's id databases: ${String(error)}`, {
      cause: error,
    });
  }
  const me = identityOf(process.pid);
  const record: LeaseRecord = {
    uid: 0,
    sandboxId,
    ownerPid: process.pid,
    ownerStartTime: me?.startTicks ?? 0,
    bootId: me?.bootId ?? bootId(),
    createdAt: new Date().toISOString(),
  };
  // Start at a random slot so concurrent allocators rarely collide on the same lock file.
  const start = Math.floor(Math.random() * count);
  const attempts = Math.min(count, 4096);
  for (let i = 0; i < attempts; i += 1) {
    const uid = firstUid + ((start + i) % count);
    if (taken.has(uid) || hasSubordinateConflict(uid, subordinate)) continue;
    const file = lockPath(lockDir, uid);
    // The lock appears whole or not at all: the record is written to a private file first and
    // hard-linked to the lock's name (link fails with EEXIST when the uid is taken). A lock is
    // never seen half-written, so a reader never mistakes a live lock for a torn, stale one.
    const draft = `${file}.draft-${process.pid}-${randomBytes(4).toString('hex')}`;
    const fd = openSync(
      draft,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      writeSync(fd, JSON.stringify({ ...record, uid }));
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(draft, file);
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') {
        throw new SandboxError('SETUP_FAILED', `cannot create uid lock ${file}`, { cause: error });
      }
      if (await reclaimStaleLease(lockDir, uid, options.reclaim)) i -= 1; // retry the same uid
      continue;
    } finally {
      rmSync(draft, { force: true });
    }
    // A uid with live processes belongs to someone else (or to a leak we did not make): skip
    // it; so is one whose walk could not read every process (never proven free).
    const walk = processesOfUid(uid);
    if (!walk.complete || walk.alive.length > 0) {
      rmSync(file, { force: true });
      continue;
    }
    let released = false;
    return {
      uid,
      gid: uid,
      sandboxId,
      lockPath: file,
      release: () => {
        if (released) return;
        released = true;
        rmSync(file, { force: true });
      },
    };
  }
  throw new SandboxError(
    'NO_FREE_IDENTITY',
    `no free uid in [${firstUid}, ${firstUid + count}) after ${attempts} attempts`,
  );
}
