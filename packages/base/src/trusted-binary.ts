import { constants, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { BadArgumentError, defineKarotteError, isErrno } from './errors.js';

/**
 * The only directories Karotte resolves system binaries from. Never `PATH`: a student who
 * can write one directory on `PATH` could otherwise replace `kill`, `mount` or `bash` for
 * code running as root.
 */
export const TRUSTED_BINARY_DIRS: readonly string[] = Object.freeze([
  '/usr/local/sbin',
  '/usr/local/bin',
  '/usr/sbin',
  '/usr/bin',
  '/sbin',
  '/bin',
]);

const TRUSTED_BINARY_ERROR_CODES = {
  /** No trusted directory has the binary. */
  BINARY_NOT_FOUND: 'system',
  /** The first match (or a link or directory on its way) is not root-owned or is writable by others. */
  UNTRUSTED_BINARY: 'system',
} as const;

export type TrustedBinaryErrorCode = keyof typeof TRUSTED_BINARY_ERROR_CODES;

/** A binary that is missing from the trusted directories, or present but not safe to run. */
export class TrustedBinaryError extends defineKarotteError({
  name: 'TrustedBinaryError',
  codes: TRUSTED_BINARY_ERROR_CODES,
}) {
  readonly binary: string;

  constructor(code: TrustedBinaryErrorCode, binary: string, message: string) {
    super(code, message);
    this.binary = binary;
  }
}

export interface ResolveTrustedBinaryOptions {
  /**
   * Directories searched, in order.
   * @default TRUSTED_BINARY_DIRS: /usr/local/sbin, /usr/local/bin, /usr/sbin, /usr/bin, /sbin, /bin
   */
  readonly dirs?: readonly string[];
}

/**
 * Resolve `name` (a bare command name such as `setpriv`) to an absolute path in the trusted
 * directories. The file and every directory on its path, before and after resolving links,
 * must be owned by root and not writable by group or others.
 *
 * @throws TrustedBinaryError `BINARY_NOT_FOUND` when no trusted directory has it,
 *   `UNTRUSTED_BINARY` when the first match is not safe (never falls back to a later one).
 */
export function resolveTrustedBinary(name: string, options: ResolveTrustedBinaryOptions = {}): string {
  if (name.length === 0 || name.includes('/') || name.includes('\0') || name === '.' || name === '..') {
    throw new BadArgumentError(`binary name must be a bare command name, got ${JSON.stringify(name)}`, {
      field: 'name',
    });
  }
  const dirs = options.dirs ?? TRUSTED_BINARY_DIRS;
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    let real: string;
    try {
      real = realpathSync(candidate);
    } catch (error) {
      if (isErrno(error, 'ENOENT', 'ENOTDIR')) continue;
      throw new TrustedBinaryError('UNTRUSTED_BINARY', name, `cannot resolve ${candidate}: ${String(error)}`);
    }
    const problem = untrustedReason(candidate, real);
    if (problem !== undefined) {
      throw new TrustedBinaryError('UNTRUSTED_BINARY', name, `refusing ${candidate}: ${problem}`);
    }
    return candidate;
  }
  throw new TrustedBinaryError(
    'BINARY_NOT_FOUND',
    name,
    `${name} was not found in the trusted directories ${dirs.join(':')}; install it (it is never looked up on PATH)`,
  );
}

/** Why `candidate` (resolving to `real`) is not safe to run as root, or undefined when it is. */
function untrustedReason(candidate: string, real: string): string | undefined {
  // Every directory the kernel passes through to reach the file, the directories holding each
  // link of a chain included: whoever can write one of them can re-point a middle link
  // (`/usr/local/bin/node -> /srv/u/node -> /usr/bin/node` with /srv/u writable by a user).
  // The link files themselves need no check: a symlink's own mode is never consulted, and
  // only the owner of the directory holding it can replace it.
  for (const dir of traversedDirectories(candidate)) {
    const stats = lstatSync(dir);
    if (stats.uid !== 0) return `${dir} is owned by uid ${stats.uid}, not root`;
    if ((stats.mode & (constants.S_IWGRP | constants.S_IWOTH)) !== 0) {
      return `${dir} is writable by group or others`;
    }
  }
  const stats = statSync(real);
  if (!stats.isFile()) return `${real} is not a regular file`;
  if (stats.uid !== 0) return `${real} is owned by uid ${stats.uid}, not root`;
  if ((stats.mode & (constants.S_IWGRP | constants.S_IWOTH)) !== 0)
    return `${real} is writable by group or others`;
  if ((stats.mode & constants.S_IXUSR) === 0) return `${real} is not executable`;
  return undefined;
}

/** Symbolic links followed at most, as the kernel's own limit (ELOOP). */
const MAX_LINK_HOPS = 40;

/**
 * The real directories traversed when resolving the absolute path `file` component by
 * component, following every symbolic link (in a directory component or the last one) as the
 * kernel does: `/` first, then each directory entered, in order, each at most once.
 */
function traversedDirectories(file: string): string[] {
  const seen = new Set<string>(['/']);
  const pending = file.split('/').filter(Boolean).reverse();
  let current = '/';
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.pop()!;
    if (part === '.') continue;
    if (part === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    const stats = lstatSync(next);
    if (stats.isSymbolicLink()) {
      hops += 1;
      if (hops > MAX_LINK_HOPS)
        throw new TrustedBinaryError('UNTRUSTED_BINARY', file, `too many links resolving ${file}`);
      const target = readlinkSync(next);
      if (path.isAbsolute(target)) current = '/';
      pending.push(...target.split('/').filter(Boolean).reverse());
      continue;
    }
    if (pending.length === 0) break; // the file itself
    current = next;
    seen.add(current);
  }
  return [...seen];
}
