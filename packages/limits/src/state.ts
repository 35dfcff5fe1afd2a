// Owner records: one small JSON file per resource this package creates (a cgroup group, a
// quota image), written BEFORE the resource exists and deleted AFTER it is gone. A harness
// killed with SIGKILL leaves its records behind; the next start reclaims every resource whose
// owner is dead (recover.ts). Records are only trusted in directories that we own and nobody
// else can write, so a student cannot forge one to make root unmount or delete something.
import fs from 'node:fs';
import path from 'node:path';
import { bootId, identityOf, isErrno, toSystemError } from '@karotte/base';
import type { ProcessIdentity } from '@karotte/base';
import { z } from 'zod';
import { LimitsError } from './errors.js';

const ownerSchema = z
  .object({
    pid: z.number().int().positive(),
    startTicks: z.number().int().nonnegative(),
    bootId: z.string().min(1).max(64),
  })
  .strict();

const karottePath = z
  .string()
  .startsWith('/')
  .max(4096)
  .refine((value) => path.basename(value).startsWith('karotte') && !value.split('/').includes('..'), {
    error: 'not a karotte path',
  });

export const groupRecordSchema = z
  .object({
    kind: z.literal('group'),
    format: z.literal(1),
    name: z.string().regex(/^karotte[A-Za-z0-9_.-]*$/),
    owner: ownerSchema,
    createdAtMs: z.number().int().nonnegative(),
    cgroupVersion: z.union([z.literal(1), z.literal(2)]),
    dirs: z.array(karottePath).max(16),
  })
  .strict();
export type GroupRecord = z.infer<typeof groupRecordSchema>;

export const quotaRecordSchema = z
  .object({
    kind: z.literal('quota'),
    format: z.literal(1),
    id: z.string().regex(/^karotte[A-Za-z0-9_.-]*$/),
    owner: ownerSchema,
    createdAtMs: z.number().int().nonnegative(),
    phase: z.enum(['preparing', 'ready', 'in_use', 'removing']),
    image: karottePath,
    mountPoint: karottePath,
  })
  .strict();
export type QuotaRecord = z.infer<typeof quotaRecordSchema>;

/** This process's identity, for records. */
export function selfIdentity(): ProcessIdentity {
  const identity = identityOf(process.pid);
  if (identity === undefined) throw new LimitsError('UNSAFE_STATE_DIR', 'cannot read /proc/self/stat');
  return identity;
}

/**
 * Create `dir` (and parents) when missing, then require that it is a real directory (not a
 * symlink) owned by our effective uid and not writable by group or others. `mode` applies to
 * directories we create.
 */
export function ensureSafeDir(dir: string, mode: number): void {
  try {
    fs.mkdirSync(dir, { recursive: true, mode });
  } catch (error) {
    throw new LimitsError('UNSAFE_STATE_DIR', `cannot create ${dir}`, { path: dir, cause: error });
  }
  checkSafeDir(dir);
}

/** Throw `UNSAFE_STATE_DIR` unless `dir` is a directory we own that only we can write. */
export function checkSafeDir(dir: string): void {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(dir);
  } catch (error) {
    throw new LimitsError('UNSAFE_STATE_DIR', `cannot stat ${dir}`, { path: dir, cause: error });
  }
  const euid = process.geteuid?.() ?? -1;
  if (!stat.isDirectory())
    throw new LimitsError('UNSAFE_STATE_DIR', `${dir} is not a directory`, { path: dir });
  if (stat.uid !== euid) {
    throw new LimitsError('UNSAFE_STATE_DIR', `${dir} is owned by uid ${stat.uid}, not ${euid}`, {
      path: dir,
    });
  }
  if ((stat.mode & 0o022) !== 0) {
    throw new LimitsError('UNSAFE_STATE_DIR', `${dir} is writable by group or others`, { path: dir });
  }
}

/**
 * Write `record` to `dir/<name>.json` atomically (temporary file, rename), mode 0600.
 * `durable` adds an fsync: only worth it for a record that must outlive a host crash (the
 * first record of a quota image on disk). A SIGKILLed harness loses nothing without it: the
 * page cache survives the process.
 */
export function writeRecord(
  dir: string,
  name: string,
  record: GroupRecord | QuotaRecord,
  durable = false,
): void {
  const file = path.join(dir, `${name}.json`);
  const temporary = `${file}.tmp-${process.pid}`;
  try {
    const fd = fs.openSync(temporary, 'w', 0o600);
    try {
      fs.writeSync(fd, JSON.stringify(record));
      if (durable) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temporary, file);
    if (durable) {
      const dirFd = fs.openSync(dir, 'r');
      try {
        fs.fsyncSync(dirFd);
      } finally {
        fs.closeSync(dirFd);
      }
    }
  } catch (error) {
    try {
      fs.rmSync(temporary, { force: true });
    } catch {
      // best effort
    }
    throw toSystemError(error, `writing owner record ${file}`);
  }
}

/** Delete `dir/<name>.json` (missing is fine). */
export function removeRecord(dir: string, name: string): void {
  try {
    fs.unlinkSync(path.join(dir, `${name}.json`));
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) throw toSystemError(error, `removing owner record ${name}`);
  }
}

/** A record file found in a state directory. */
export interface FoundRecord<T> {
  /** File name in the directory. */
  readonly file: string;
  /** The parsed record, or null when the file is not a valid record. */
  readonly record: T | null;
  /** The process that claimed it for reclaiming, when the file is a claim. */
  readonly claimedBy: ProcessIdentity | null;
}

const CLAIM = /\.json\.claim-(\d+)-(\d+)$/;

/** Read every record (and every claim of one) in `dir`, each file at most 64 KiB. */
export function readRecords<T>(dir: string, schema: z.ZodType<T>): FoundRecord<T>[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw toSystemError(error, `listing ${dir}`);
  }
  const out: FoundRecord<T>[] = [];
  const currentBoot = bootId();
  for (const name of names) {
    const claim = CLAIM.exec(name);
    if (!name.endsWith('.json') && claim === null) continue;
    const file = path.join(dir, name);
    let text: string;
    try {
      const stat = fs.lstatSync(file);
      if (!stat.isFile() || stat.size > 65_536) continue;
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    let record: T | null;
    try {
      // eslint-disable-next-line no-restricted-syntax -- our own record in a directory only we can write; validated by the schema below
      const parsed = schema.safeParse(JSON.parse(text));
      record = parsed.success ? parsed.data : null;
    } catch {
      record = null;
    }
    out.push({
      file: name,
      record,
      claimedBy: claim ? { pid: Number(claim[1]), startTicks: Number(claim[2]), bootId: currentBoot } : null,
    });
  }
  return out;
}

/**
 * Claim a record for reclaiming by renaming it to `<name>.json.claim-<pid>-<startTicks>`:
 * rename is atomic, so of two harnesses starting at once only one reclaims a resource.
 * Returns the claimed file name, or null when another process got it first.
 */
export function claimRecord(dir: string, file: string): string | null {
  const self = selfIdentity();
  const base = file.replace(CLAIM, '.json');
  const claimed = `${base}.claim-${self.pid}-${self.startTicks}`;
  try {
    fs.renameSync(path.join(dir, file), path.join(dir, claimed));
    return claimed;
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return null;
    throw toSystemError(error, `claiming ${file}`);
  }
}

/** Delete a record file by its file name (missing is fine). */
export function removeRecordFile(dir: string, file: string): void {
  try {
    fs.unlinkSync(path.join(dir, file));
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) throw toSystemError(error, `removing ${file}`);
  }
}
