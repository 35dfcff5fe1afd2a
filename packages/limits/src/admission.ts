// Admission: concurrent episodes on one host never hold more memory and file-table budget
// than the host can give. Each episode reserves its memory limit and its worst-case open files
// (pids × RLIMIT_NOFILE: no process of it can hold more descriptors than that) in a host-wide
// ledger before its group exists; an episode that does not fit waits for room (bounded) or is
// refused with a message saying what is short. Reservations of dead harnesses are ignored and
// removed, so a crash never leaks capacity.
//
// The ledger is one small file per reservation in a root-only directory, read and written
// under a lock (an exclusive `mkdir`, stamped with its holder's process identity, taken over
// when the holder is gone): reading the sum and adding to it is one step across processes.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { GiB, isErrno, isSameProcessAlive, parseJsonStrict, parseOptions } from '@karotte/base';
import { HARNESS_HEADROOM_BYTES } from './constants.js';
import { LimitsError } from './errors.js';
import { hostMemoryBytes } from './proc.js';
import { ensureSafeDir, selfIdentity } from './state.js';

/** Where reservations live. */
const DEFAULT_ADMISSION_DIR = '/run/karotte/admission';

/** The share of `fs.file-max` all episodes together may reserve (the rest is the host's). */
const FILE_TABLE_SHARE = 0.8;

/** The memory all episodes together may reserve, and the file-table budget. */
export interface HostCapacity {
  readonly memoryBytes: number;
  readonly files: number;
}

/**
 * What this host can give all episodes together: its RAM less the harness headroom, and
 * `FILE_TABLE_SHARE` of `fs.file-max`.
 */
export function hostCapacity(): HostCapacity {
  let fileMax = 0;
  try {
    fileMax = Number(fs.readFileSync('/proc/sys/fs/file-max', 'utf8').trim());
  } catch {
    // unreadable: no file-table budget can be promised
  }
  return {
    memoryBytes: Math.max(0, hostMemoryBytes() - HARNESS_HEADROOM_BYTES),
    files: Number.isSafeInteger(fileMax) ? Math.floor(fileMax * FILE_TABLE_SHARE) : Number.MAX_SAFE_INTEGER,
  };
}

/** How many default-sized episodes the host's memory is shared between when a task names none. */
const DEFAULT_MEMORY_SHARES = 4;

/**
 * The memory limit of an episode whose task names none: a share of what the host can give all
 * episodes (`hostCapacity().memoryBytes / DEFAULT_MEMORY_SHARES`, whole pages), never the whole
 * host, so a few concurrent default episodes cannot overcommit it by construction.
 */
export function defaultEpisodeMemoryBytes(capacity: HostCapacity = hostCapacity()): number {
  const page = 4096;
  return Math.floor(capacity.memoryBytes / DEFAULT_MEMORY_SHARES / page) * page;
}

export const admissionOptionsSchema = z
  .object({
    /** The episode's memory limit. */
    memoryBytes: z.number().int().positive(),
    /** Its worst-case open files: pids × RLIMIT_NOFILE. */
    files: z.number().int().positive(),
    /** Who reserves (a sandbox id, a grader uid), for the messages and the ledger's file names. */
    label: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
    /** How long to wait for room before refusing. @default 120000 */
    waitMs: z.number().int().nonnegative().max(3_600_000).default(120_000),
    /** Root-only directory of the ledger. @default '/run/karotte/admission' */
    dir: z.string().startsWith('/').default(DEFAULT_ADMISSION_DIR),
    /** What the host can give (tests give a small one). @default hostCapacity() */
    capacity: z
      .object({ memoryBytes: z.number().int().positive(), files: z.number().int().positive() })
      .strict()
      .optional(),
    /** Cancels the wait. */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();
export type AdmissionOptions = z.input<typeof admissionOptionsSchema>;

/** A reservation of host capacity, held until `release()` (or the holder's death). */
export interface Admission {
  readonly memoryBytes: number;
  readonly files: number;
  /** How long the episode waited for room. */
  readonly waitedMs: number;
  /** Give the capacity back. Idempotent. */
  release(): void;
}

const ownerSchema = z
  .object({
    pid: z.number().int().positive(),
    startTicks: z.number().int().nonnegative(),
    bootId: z.string().min(1).max(64),
  })
  .strict();
const reservationSchema = z
  .object({
    memoryBytes: z.number().int().nonnegative(),
    files: z.number().int().nonnegative(),
    owner: ownerSchema,
  })
  .strict();

function readJson(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const parsed = parseJsonStrict(text, { maxDepth: 3, maxStringLength: 128 });
  return parsed.ok ? parsed.value : undefined;
}

/** A lock younger than this whose record cannot be read is being written: wait, do not take it. */
const TORN_LOCK_AGE_MS = 10_000;

/** Take the ledger's lock (exclusive mkdir), taking over a lock whose holder is gone. */
async function lock(dir: string, signal: AbortSignal | undefined): Promise<() => void> {
  const lockDir = path.join(dir, 'lock');
  const owner = JSON.stringify(selfIdentity());
  for (;;) {
    signal?.throwIfAborted();
    try {
      fs.mkdirSync(lockDir, { mode: 0o700 });
      fs.writeFileSync(path.join(lockDir, 'owner'), owner, { mode: 0o600 });
      return () => {
        fs.rmSync(lockDir, { recursive: true, force: true });
      };
    } catch (error) {
      if (!isErrno(error, 'EEXIST')) {
        throw new LimitsError('UNSAFE_STATE_DIR', `cannot lock ${dir}`, { path: lockDir, cause: error });
      }
    }
    const holder = ownerSchema.safeParse(readJson(path.join(lockDir, 'owner')));
    const age = Date.now() - (fs.statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if ((holder.success && !isSameProcessAlive(holder.data)) || (!holder.success && age > TORN_LOCK_AGE_MS)) {
      // Its holder died inside the critical section: take it over (a rename wins once).
      const aside = `${lockDir}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
      try {
        fs.renameSync(lockDir, aside);
        fs.rmSync(aside, { recursive: true, force: true });
      } catch {
        // another process took it over first
      }
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** The live reservations of the ledger (a dead holder's are removed on the way). */
function liveReservations(dir: string): z.infer<typeof reservationSchema>[] {
  const out: z.infer<typeof reservationSchema>[] = [];
  for (const name of fs.readdirSync(dir)) {
    if (!name.endsWith('.json')) continue;
    const file = path.join(dir, name);
    const record = reservationSchema.safeParse(readJson(file));
    // Written whole under the lock, so an unreadable one is damage: it holds nothing.
    if (!record.success || !isSameProcessAlive(record.data.owner)) {
      fs.rmSync(file, { force: true });
      continue;
    }
    out.push(record.data);
  }
  return out;
}

function describe(bytes: number): string {
  return bytes >= GiB ? `${(bytes / GiB).toFixed(1)} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`;
}

/**
 * Reserve host capacity for one episode, waiting (bounded) for others to release theirs.
 *
 * @throws LimitsError `ADMISSION_REFUSED` when the request exceeds what the whole host can give
 *   (it could never fit), `ADMISSION_TIMEOUT` when it did not fit within `waitMs`, `ABORTED`,
 *   `UNSAFE_STATE_DIR`; BadArgumentError for invalid options.
 */
export async function admit(options: AdmissionOptions): Promise<Admission> {
  const o = parseOptions(admissionOptionsSchema, options, 'admission options');
  const capacity = o.capacity ?? hostCapacity();
  if (o.memoryBytes > capacity.memoryBytes || o.files > capacity.files) {
    throw new LimitsError(
      'ADMISSION_REFUSED',
      `${o.label} asks for ${describe(o.memoryBytes)} of memory and ${o.files} open files (pids × nofile); this host gives all episodes together ${describe(capacity.memoryBytes)} and ${capacity.files} files: lower the task's limits`,
    );
  }
  ensureSafeDir(o.dir, 0o700);
  const owner = selfIdentity();
  const started = performance.now();
  for (;;) {
    if (o.abortSignal?.aborted === true) {
      throw new LimitsError('ABORTED', 'admission was cancelled', { cause: o.abortSignal.reason });
    }
    const unlock = await lock(o.dir, o.abortSignal);
    let used: { memoryBytes: number; files: number };
    let file: string | undefined;
    try {
      const live = liveReservations(o.dir);
      used = {
        memoryBytes: live.reduce((sum, r) => sum + r.memoryBytes, 0),
        files: live.reduce((sum, r) => sum + r.files, 0),
      };
      if (
        used.memoryBytes + o.memoryBytes <= capacity.memoryBytes &&
        used.files + o.files <= capacity.files
      ) {
        file = path.join(o.dir, `${o.label}-${randomBytes(4).toString('hex')}.json`);
        fs.writeFileSync(file, JSON.stringify({ memoryBytes: o.memoryBytes, files: o.files, owner }), {
          mode: 0o600,
          flag: 'wx',
        });
      }
    } finally {
      unlock();
    }
    if (file !== undefined) {
      const reservation = file;
      let released = false;
      return {
        memoryBytes: o.memoryBytes,
        files: o.files,
        waitedMs: Math.round(performance.now() - started),
        release: () => {
          if (released) return;
          released = true;
          fs.rmSync(reservation, { force: true });
        },
      };
    }
    if (performance.now() - started >= o.waitMs) {
      throw new LimitsError(
        'ADMISSION_TIMEOUT',
        `${o.label} waited ${o.waitMs} ms for ${describe(o.memoryBytes)} of memory and ${o.files} open files; running episodes hold ${describe(used.memoryBytes)} of ${describe(capacity.memoryBytes)} and ${used.files} of ${capacity.files} files`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
