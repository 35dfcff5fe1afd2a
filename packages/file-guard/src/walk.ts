// Walking untrusted paths one component at a time, never following a link.
import fs from 'node:fs';
import {
  DIR_FLAGS,
  O_PATH,
  PATH_FLAGS,
  closeQuietly,
  errnoOf,
  fdPath,
  fdRealPath,
  openAt,
  reopen,
  splitComponents,
} from './fd-path.js';

const { O_NOFOLLOW, O_DIRECTORY } = fs.constants;
/** Reopening through the magic link must not carry O_NOFOLLOW (the link *is* the final component). */
export const REOPEN_DIR_FLAGS = DIR_FLAGS & ~O_NOFOLLOW;

/** Why a walk stopped. `index` is the component (0-based) where it stopped. */
export interface WalkFailure {
  readonly kind: 'symlink' | 'not-directory' | 'missing' | 'denied' | 'error';
  readonly index: number;
  readonly errno?: string | undefined;
  /** Owner of the offending symbolic link, when `kind` is `symlink`. */
  readonly ownerUid?: number;
  readonly cause?: unknown;
}

export type ClassifyResult =
  | { readonly ok: true; readonly pathFd: number; readonly stats: fs.BigIntStats }
  | { readonly ok: false; readonly errno: string | undefined; readonly cause: unknown };

/**
 * Open `name` in `dirFd` with O_PATH|O_NOFOLLOW and fstat it: classifies a name without
 * opening what it names (no device open, no FIFO, no lease break, no link followed).
 */
export function classifyAt(dirFd: number, name: Buffer): ClassifyResult {
  let pathFd: number;
  try {
    pathFd = openAt(dirFd, name, PATH_FLAGS);
  } catch (error) {
    return { ok: false, errno: errnoOf(error), cause: error };
  }
  try {
    return { ok: true, pathFd, stats: fs.fstatSync(pathFd, { bigint: true }) };
  } catch (error) {
    closeQuietly(pathFd);
    return { ok: false, errno: errnoOf(error), cause: error };
  }
}

/** Map an errno of a lookup to a walk failure kind. */
function lookupFailureKind(errno: string | undefined): WalkFailure['kind'] {
  switch (errno) {
    case 'ENOENT':
      return 'missing';
    case 'ENOTDIR':
      return 'not-directory';
    case 'ELOOP':
      return 'symlink';
    case 'EACCES':
    case 'EPERM':
      return 'denied';
    default:
      return 'error';
  }
}

/**
 * Open the directory at `components` below `startFd`. Each component is classified with
 * O_PATH|O_NOFOLLOW (a link is refused, never followed) and the walk continues from that
 * O_PATH descriptor, so only search permission is needed on the way, as for a normal path
 * walk. The final directory is reopened through its own descriptor (the inode that was
 * checked is the one opened) as O_RDONLY|O_DIRECTORY when `readable`, else kept O_PATH.
 * The returned descriptor is always new (the caller closes it, never `startFd`).
 */
export function openDirectoryComponents(
  startFd: number,
  components: readonly Buffer[],
  readable = false,
): { ok: true; fd: number; stats: fs.BigIntStats } | { ok: false; failure: WalkFailure } {
  let current = reopen(startFd, O_PATH | O_DIRECTORY);
  let stats = fs.fstatSync(current, { bigint: true });
  let owned = true;
  try {
    for (let index = 0; index < components.length; index += 1) {
      const classified = classifyAt(current, components[index]!);
      if (!classified.ok) {
        return {
          ok: false,
          failure: {
            kind: lookupFailureKind(classified.errno),
            index,
            errno: classified.errno,
            cause: classified.cause,
          },
        };
      }
      if (classified.stats.isSymbolicLink() || !classified.stats.isDirectory()) {
        closeQuietly(classified.pathFd);
        return {
          ok: false,
          failure: classified.stats.isSymbolicLink()
            ? { kind: 'symlink', index, ownerUid: Number(classified.stats.uid) }
            : { kind: 'not-directory', index },
        };
      }
      closeQuietly(current);
      current = classified.pathFd;
      stats = classified.stats;
    }
    if (readable) {
      let opened: number;
      try {
        opened = reopen(current, REOPEN_DIR_FLAGS);
      } catch (error) {
        const errno = errnoOf(error);
        return {
          ok: false,
          failure: { kind: lookupFailureKind(errno), index: components.length - 1, errno, cause: error },
        };
      }
      closeQuietly(current);
      current = opened;
    }
    const result = { ok: true as const, fd: current, stats };
    owned = false;
    return result;
  } finally {
    if (owned) closeQuietly(current);
  }
}

/**
 * Open an absolute directory path from `/`, every component without following a link.
 * Returns the descriptor and the kernel's real path of it.
 */
export function openAbsoluteDirectory(
  absolute: Buffer,
  readable = false,
): { ok: true; fd: number; real: Buffer } | { ok: false; failure: WalkFailure } {
  const rootFd = fs.openSync('/', O_PATH | O_DIRECTORY);
  try {
    const opened = openDirectoryComponents(rootFd, splitComponents(absolute), readable);
    if (!opened.ok) return opened;
    return { ok: true, fd: opened.fd, real: fdRealPath(opened.fd) };
  } finally {
    closeQuietly(rootFd);
  }
}

/** True when `real` is `prefix` itself or lies below it. */
export function isInside(real: Buffer, prefix: Buffer): boolean {
  if (prefix.length === 1 && prefix[0] === 0x2f) return real[0] === 0x2f;
  if (real.length < prefix.length) return false;
  if (real.compare(prefix, 0, prefix.length, 0, prefix.length) !== 0) return false;
  return real.length === prefix.length || real[prefix.length] === 0x2f;
}

/**
 * Check that `/proc/self/fd/<fd>` resolves to the descriptor `fd` of this process: without a
 * working /proc (not mounted, or mounted for another PID namespace) the fd-relative walk is
 * not sound, and nothing may be read.
 */
export function procSelfFdWorks(fd: number): boolean {
  try {
    const direct = fs.fstatSync(fd, { bigint: true });
    const viaProc = fs.statSync(fdPath(fd), { bigint: true });
    return direct.dev === viaProc.dev && direct.ino === viaProc.ino;
  } catch {
    return false;
  }
}
