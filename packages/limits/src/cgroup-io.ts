// The file operations the cgroup backends perform, behind a small interface so the v2 logic
// can run against a fake cgroupfs on hosts without v2 controllers (tests say so where they do).
import fs from 'node:fs';
import { isErrno } from '@karotte/base';
import { LimitsError } from './errors.js';

/** File operations on a cgroup file system. */
export interface CgroupIo {
  read(file: string): string;
  /** Write `value` to an existing interface file (never creates it). */
  write(file: string, value: string): void;
  mkdir(dir: string): void;
  rmdir(dir: string): void;
  exists(file: string): boolean;
  /** Names of the sub-directories of `dir` (child groups). */
  subdirs(dir: string): string[];
}

/** The real file system. Writes use O_WRONLY|O_TRUNC without O_CREAT: a missing interface file is an error. */
export const realCgroupIo: CgroupIo = {
  read: (file) => fs.readFileSync(file, 'utf8'),
  write: (file, value) => {
    const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW);
    try {
      fs.writeSync(fd, value);
    } finally {
      fs.closeSync(fd);
    }
  },
  mkdir: (dir) => {
    fs.mkdirSync(dir);
  },
  rmdir: (dir) => {
    fs.rmdirSync(dir);
  },
  exists: (file) => fs.existsSync(file),
  subdirs: (dir) =>
    fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name),
};

/**
 * Write `value` to `file` and read it back; throw `LIMIT_NOT_APPLIED` unless `accept(readBack)`.
 * Returns what was read back. A write the kernel refuses and a write that silently did not take
 * both fail closed.
 */
export function writeChecked(
  io: CgroupIo,
  file: string,
  value: string,
  accept: (readBack: string) => boolean = (readBack) => readBack === value,
): string {
  try {
    io.write(file, value);
  } catch (error) {
    throw new LimitsError(
      'LIMIT_NOT_APPLIED',
      `writing ${JSON.stringify(value)} to ${file} failed: ${isErrno(error) ? error.code : String(error)}`,
      { path: file, wanted: value, cause: error },
    );
  }
  let readBack: string;
  try {
    readBack = io.read(file).trim();
  } catch (error) {
    throw new LimitsError('LIMIT_NOT_APPLIED', `reading back ${file} failed`, {
      path: file,
      wanted: value,
      cause: error,
    });
  }
  if (!accept(readBack)) {
    throw new LimitsError(
      'LIMIT_NOT_APPLIED',
      `${file}: wrote ${JSON.stringify(value)} but read back ${JSON.stringify(readBack)}`,
      { path: file, wanted: value, got: readBack },
    );
  }
  return readBack;
}

/**
 * Accept a byte limit read back after the kernel rounded it down to its page size: the value
 * read must not exceed what was asked, and may be lower by less than 64 KiB (the largest page).
 */
export function acceptRoundedBytes(wanted: number): (readBack: string) => boolean {
  return (readBack) => {
    const got = Number(readBack);
    return Number.isSafeInteger(got) && got <= wanted && wanted - got < 65_536;
  };
}

/** Read an integer file (`max` and out-of-range values read as Infinity). */
export function readNumber(io: CgroupIo, file: string): number {
  const text = io.read(file).trim();
  if (text === 'max') return Number.POSITIVE_INFINITY;
  const value = Number(text);
  if (!Number.isFinite(value)) return Number.NaN;
  // v1 reports "unlimited" as a huge page-aligned number (2^63 - page size).
  return value >= 2 ** 60 ? Number.POSITIVE_INFINITY : value;
}

/** Read a flat keyed file (`memory.events`, `memory.oom_control`, `pids.events`) into a map. */
export function readKeyed(io: CgroupIo, file: string): Map<string, number> {
  const out = new Map<string, number>();
  let text: string;
  try {
    text = io.read(file);
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key !== undefined && value !== undefined && /^\d+$/.test(value)) out.set(key, Number(value));
  }
  return out;
}

/** Pids in `dir`'s cgroup.procs and in every descendant group (bounded depth). */
export function readPidsRecursive(io: CgroupIo, dir: string, depth = 0): number[] {
  const out: number[] = [];
  let text: string;
  try {
    text = io.read(`${dir}/cgroup.procs`);
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) throw error;
    return out;
  }
  for (const line of text.split('\n')) {
    const pid = Number(line.trim());
    if (line.trim() !== '' && Number.isSafeInteger(pid) && pid > 0) out.push(pid);
  }
  if (depth < 16) {
    for (const child of safeSubdirs(io, dir))
      out.push(...readPidsRecursive(io, `${dir}/${child}`, depth + 1));
  }
  return out;
}

/** Sub-directories of `dir`, or none when it is gone. */
function safeSubdirs(io: CgroupIo, dir: string): string[] {
  try {
    return io.subdirs(dir);
  } catch {
    return [];
  }
}

/** Remove `dir` and every child group, deepest first. Missing directories are fine. */
export function rmdirRecursive(io: CgroupIo, dir: string, depth = 0): void {
  if (depth < 16) for (const child of safeSubdirs(io, dir)) rmdirRecursive(io, `${dir}/${child}`, depth + 1);
  try {
    io.rmdir(dir);
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) throw error;
  }
}
