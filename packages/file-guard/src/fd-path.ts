// Descriptor-relative file operations for Node.js, which has no openat(2).
//
// Every call goes through the magic link `/proc/self/fd/<dirFd>/<name>`. The kernel resolves
// `/proc/self/fd/<dirFd>` by jumping to the exact dentry and mount the descriptor holds (it
// never re-parses a path string), then looks `<name>` up in that directory. With
// `O_NOFOLLOW` on the final component this is equivalent to
// `openat(dirFd, name, O_NOFOLLOW)`: moving, renaming or replacing the directory by a
// symbolic link after it was opened cannot redirect the lookup. The same holds for lstat,
// readlink, mkdir, unlink, rmdir and readdir through the same prefix.
//
// Names are raw bytes (Buffer): a student may use invalid UTF-8, newlines or leading dashes.
// A name is always one component: never empty, never `.` or `..`, never containing `/` or NUL.
import fs from 'node:fs';

/** `O_PATH` (Linux, asm-generic value; Node does not export it). */
export const O_PATH = 0o10000000;
const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = fs.constants;

/** Flags for opening a directory without following a link at the final component. */
export const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK;
/** Flags for opening an untrusted file: no link, no blocking on a FIFO, no controlling tty. */
export const FILE_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
/** Flags for classifying a name without opening what it names (no device open, no FIFO). */
export const PATH_FLAGS = O_PATH | O_NOFOLLOW;

const SLASH = 0x2f;
const DOT = 0x2e;

/** `/proc/self/fd/<fd>` or `/proc/self/fd/<fd>/<name>` as bytes. */
export function fdPath(fd: number, name?: Buffer): Buffer {
  const prefix = Buffer.from(`/proc/self/fd/${fd}`);
  if (name === undefined) return prefix;
  return Buffer.concat([prefix, Buffer.from('/'), name]);
}

/** True when `name` is one safe path component. */
export function isComponent(name: Buffer): boolean {
  if (name.length === 0) return false;
  if (name.length === 1 && name[0] === DOT) return false;
  if (name.length === 2 && name[0] === DOT && name[1] === DOT) return false;
  return name.indexOf(SLASH) === -1 && name.indexOf(0) === -1;
}

function checkComponent(name: Buffer): void {
  // A programming error, never reachable from student data: names come from readdir or
  // from validated declared paths.
  if (!isComponent(name)) throw new RangeError(`not a single path component: ${name.toString('hex')}`);
}

/** openat(dirFd, name, flags, mode). */
export function openAt(dirFd: number, name: Buffer, flags: number, mode?: number): number {
  checkComponent(name);
  return fs.openSync(fdPath(dirFd, name), flags, mode);
}

/** fstatat(dirFd, name, AT_SYMLINK_NOFOLLOW) with bigint times. */
export function lstatAt(dirFd: number, name: Buffer): fs.BigIntStats {
  checkComponent(name);
  return fs.lstatSync(fdPath(dirFd, name), { bigint: true });
}

/** readlinkat(dirFd, name) as raw bytes. */
export function readlinkAt(dirFd: number, name: Buffer): Buffer {
  checkComponent(name);
  return fs.readlinkSync(fdPath(dirFd, name), { encoding: 'buffer' });
}

/** mkdirat(dirFd, name, mode). */
export function mkdirAt(dirFd: number, name: Buffer, mode: number): void {
  checkComponent(name);
  fs.mkdirSync(fdPath(dirFd, name), { mode });
}

/** symlinkat(target, dirFd, name). */
export function symlinkAt(target: Buffer, dirFd: number, name: Buffer): void {
  checkComponent(name);
  fs.symlinkSync(target, fdPath(dirFd, name));
}

/** unlinkat(dirFd, name, 0): removes a link itself, never what it points to. */
export function unlinkAt(dirFd: number, name: Buffer): void {
  checkComponent(name);
  fs.unlinkSync(fdPath(dirFd, name));
}

/** unlinkat(dirFd, name, AT_REMOVEDIR). */
export function rmdirAt(dirFd: number, name: Buffer): void {
  checkComponent(name);
  fs.rmdirSync(fdPath(dirFd, name));
}

/** Reopen what an `O_PATH` descriptor refers to (the same inode, no path lookup). */
export function reopen(pathFd: number, flags: number): number {
  return fs.openSync(fdPath(pathFd), flags);
}

/** The kernel's current path of what `fd` refers to (readlink /proc/self/fd/N), as bytes. */
export function fdRealPath(fd: number): Buffer {
  return fs.readlinkSync(fdPath(fd), { encoding: 'buffer' });
}

/** One directory entry: raw name and the type readdir reported (may be `unknown`). */
export interface DirEntry {
  readonly name: Buffer;
  readonly type: EntryType;
}

export type EntryType =
  'file' | 'directory' | 'symlink' | 'fifo' | 'socket' | 'char-device' | 'block-device' | 'unknown';

function direntType(entry: fs.Dirent<Buffer> | fs.Dirent): EntryType {
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'directory';
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isFIFO()) return 'fifo';
  if (entry.isSocket()) return 'socket';
  if (entry.isCharacterDevice()) return 'char-device';
  if (entry.isBlockDevice()) return 'block-device';
  return 'unknown';
}

/** The type of a stat result. */
export function statType(stats: fs.BigIntStats | fs.Stats): EntryType {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  if (stats.isCharacterDevice()) return 'char-device';
  if (stats.isBlockDevice()) return 'block-device';
  return 'unknown';
}

/**
 * Read the entries of the directory `dirFd` refers to, streaming, and stop after `limit`
 * entries: a directory with a million names costs at most `limit + 1` entries of memory.
 * Returns `overflow: true` when there were more than `limit`.
 */
export function readDirAt(dirFd: number, limit: number): { entries: DirEntry[]; overflow: boolean } {
  // Node's types only name string encodings for opendir, but `buffer` is honoured at runtime
  // and is the only lossless choice for names that are not UTF-8.
  const dir = fs.opendirSync(fdPath(dirFd), {
    encoding: 'buffer',
    bufferSize: 128,
  } as unknown as fs.OpenDirOptions);
  const entries: DirEntry[] = [];
  try {
    for (;;) {
      const entry = dir.readSync() as fs.Dirent<Buffer> | null;
      if (entry === null) return { entries, overflow: false };
      const name = entry.name;
      entries.push({ name: Buffer.isBuffer(name) ? name : Buffer.from(name), type: direntType(entry) });
      if (entries.length > limit) return { entries, overflow: true };
    }
  } finally {
    dir.closeSync();
  }
}

/** Close a descriptor, ignoring EBADF-like failures on cleanup paths. */
export function closeQuietly(fd: number | undefined): void {
  if (fd === undefined || fd < 0) return;
  try {
    fs.closeSync(fd);
  } catch {
    // already closed
  }
}

/** The errno code of an error, or undefined. */
export function errnoOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** Bytes of `path` split into components; empty components (`//`) are dropped. */
export function splitComponents(path: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= path.length; i += 1) {
    if (i === path.length || path[i] === SLASH) {
      if (i > start) out.push(path.subarray(start, i));
      start = i + 1;
    }
  }
  return out;
}

/** Join components with `/` (no leading slash). */
export function joinComponents(parts: readonly Buffer[]): Buffer {
  const pieces: Buffer[] = [];
  parts.forEach((part, index) => {
    if (index > 0) pieces.push(Buffer.from('/'));
    pieces.push(part);
  });
  return Buffer.concat(pieces);
}

/** `<parent>/<name>`, or `<name>` when `parent` is empty. */
export function childPath(parent: Buffer, name: Buffer): Buffer {
  return parent.length === 0 ? name : Buffer.concat([parent, Buffer.from('/'), name]);
}
