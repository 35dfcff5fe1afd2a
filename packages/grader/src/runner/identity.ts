import { randomInt } from 'node:crypto';
import { mkdir, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  hasSubordinateConflict,
  isErrno,
  readAccountIds,
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

/** True when any process has `uid` as its real, effective, saved or filesystem uid. */
async function uidInUse(uid: number): Promise<boolean> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  // Read the status files in parallel batches: a serial walk costs tens of ms on a busy host.
  for (let i = 0; i < pids.length; i += 128) {
    const batch = await Promise.all(
      pids.slice(i, i + 128).map((pid) => readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')),
    );
    for (const status of batch) {
      const line = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status);
      if (line !== null && line.slice(1).some((value) => Number(value) === uid)) return true;
    }
  }
  return false;
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
    if (await uidInUse(uid)) {
      await rmdir(lock).catch(() => undefined);
      continue;
    }
    // Who holds the uid: recovery after a crash frees only uids whose holder is gone.
    await writeFile(path.join(lock, 'owner'), `${await ownerStamp(process.pid)}\n`, { mode: 0o600 });
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

/** `<pid> <start time in clock ticks>`: a pid plus its start time names one process forever. */
async function ownerStamp(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Field 22 (starttime), counted after the last ')' (the command name may contain spaces).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return `${pid} ${fields[19] ?? '0'}`;
}

/** True when the process a stamp names is still the same live process. */
export async function stampAlive(stamp: string): Promise<boolean> {
  const pid = Number(stamp.split(' ')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    return (await ownerStamp(pid)) === stamp.trim();
  } catch {
    return false;
  }
}
