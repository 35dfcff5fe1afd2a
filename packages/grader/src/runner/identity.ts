import { randomInt } from 'node:crypto';
import { mkdir, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import {
  hasSubordinateConflict,
  identityOf,
  isDeadState,
  isErrno,
  isSameProcessAlive,
  parseJsonStrict,
  processesOfUid,
  readAccountIds,
  readProcessStat,
  readSubordinateIds,
  toSystemError,
} from '@karotte/base';
import type { SubordinateRange } from '@karotte/base';
import { GraderError } from '../errors.js';

/** A fresh, unshared numeric identity for one grader run. */
export interface GraderIdentity {
  readonly uid: number;
  readonly gid: number;
  /** Give the uid back. Call only after every process of the uid is confirmed gone. */
  release(): Promise<void>;
}

export interface AllocateIdentityOptions {
  /** Root-owned directory of lock entries, one per uid in use. */
  readonly lockDir: string;
  /** First uid of the range. */
  readonly first: number;
  /** Number of uids in the range. */
  readonly count: number;
  /** Subordinate id files (`owner:start:count` lines). @default ['/etc/subuid', '/etc/subgid'] */
  readonly subordinateIdFiles?: readonly string[];
}

/** Default grader uid range: far above any system or human uid, below 2^32 - 2. */
/**
 * Default grader uids: below 2^31 - 1, so outside the subordinate range podman recommends
 * (`containers:2147483647:2147483648`), and below the student sandbox's range (2,000,000,000+).
 */
export const GRADER_UID_RANGE = Object.freeze({ first: 1_900_000_000, count: 100_000_000 });

/**
 * True when any process holds `uid` (real, effective, saved or filesystem uid). A walk that
 * could not read every process counts as "in use": a uid is handed out only when proven free.
 */
function uidInUse(uid: number): boolean {
  const walk = processesOfUid(uid);
  return !walk.complete || walk.alive.length > 0;
}

/**
 * Allocate a uid nobody uses: a random uid in the range whose lock entry `mkdir` creates
 * exclusively (so two graders, even in two processes, never share one), with no live process.
 * The uid is named in no passwd or group entry, and owns or lies in no subordinate id range
 * (/etc/subuid, /etc/subgid); its gid is the same number.
 */
export async function allocateGraderIdentity(options: AllocateIdentityOptions): Promise<GraderIdentity> {
  try {
    await mkdir(options.lockDir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new GraderError('SETUP_FAILED', `cannot create ${options.lockDir}: ${String(error)}`, {
      cause: error,
    });
  }
  let taken: Set<number>;
  let subordinate: SubordinateRange[];
  try {
    taken = await readAccountIds();
    subordinate = await readSubordinateIds(options.subordinateIdFiles);
  } catch (error) {
    throw new GraderError('SETUP_FAILED', `cannot read the host's id databases: ${String(error)}`, {
      cause: error,
    });
  }
  for (let attempt = 0; attempt < 32; attempt += 1) {
    const uid = options.first + randomInt(options.count);
    // A uid of an account would share its files; one that owns or lies in a subordinate range
    // could be become by someone else.
    if (taken.has(uid) || hasSubordinateConflict(uid, subordinate)) continue;
    const lock = path.join(options.lockDir, String(uid));
    try {
      // mkdir is atomic: exactly one allocator wins a given uid.
      await mkdir(lock, { mode: 0o700 });
    } catch (error) {
      if (isErrno(error, 'EEXIST')) continue;
      throw toSystemError(error, `mkdir ${lock}`);
    }
    if (uidInUse(uid)) {
      await rmdir(lock).catch(() => undefined);
      continue;
    }
    // Who holds the uid: recovery after a crash frees only uids whose holder is gone.
    await writeFile(path.join(lock, 'owner'), `${ownerStamp()}\n`, { mode: 0o600 });
    return {
      uid,
      gid: uid,
      release: async () => {
        await rm(lock, { recursive: true, force: true });
      },
    };
  }
  throw new GraderError('SETUP_FAILED', 'could not find a free grader uid in 32 attempts');
}

/** The lock's owner stamp: the holder's process identity (pid, start ticks, boot id), as JSON. */
function ownerStamp(): string {
  const identity = identityOf(process.pid);
  if (identity === undefined) throw new GraderError('SETUP_FAILED', 'cannot read /proc/self/stat');
  return JSON.stringify(identity);
}

const ownerStampSchema = z.strictObject({
  pid: z.number().int().positive(),
  startTicks: z.number().int().nonnegative(),
  bootId: z.string().min(1).max(64),
});

/**
 * True when the process a stamp names is still the same live process. A stamp of an earlier
 * version (`<pid> <start ticks>`, no boot id) is still read, as of this boot: that errs toward
 * "alive", so a running older grader's uid is never freed under it.
 */
export function stampAlive(stamp: string): boolean {
  const text = stamp.trim();
  const legacy = /^(\d+) (\d+)$/.exec(text);
  if (legacy !== null) {
    const stat = readProcessStat(Number(legacy[1]));
    return stat !== undefined && stat.startTicks === Number(legacy[2]) && !isDeadState(stat.state);
  }
  const parsed = parseJsonStrict(text, { maxDepth: 1, maxStringLength: 64 });
  if (!parsed.ok) return false;
  const owner = ownerStampSchema.safeParse(parsed.value);
  return owner.success && isSameProcessAlive(owner.data);
}
