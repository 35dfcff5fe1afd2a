// Node.js's compile cache for the CLI's own code: V8 keeps the compiled form of each module it
// loads, and the next process loads it from disk instead of compiling again. The CLI is two
// large chunks (the packages, zod), and compiling them is a fixed cost of every command
// (about 20 ms of a `karotte run`: apps/karotte/README.md, Benchmarks).
//
// A compiled module is code: whoever can write the cache can run code in the next process that
// reads it. So it is used only by root, in a directory only root can write, with every
// directory on the way to it root's and closed to group and others. Anything else (another
// user, a directory that fails the check, a Node.js without the cache) runs without one.
import fs from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import process from 'node:process';

/** Where root's CLI keeps it: regenerable data (FHS /var/cache). */
export const COMPILE_CACHE_DIR = '/var/cache/karotte/node-compile-cache';

/**
 * Node.js keeps one file per module and never removes one: each rebuild of the CLI (or another
 * checkout of it, or a command loading other packages) adds its entries. The CLI sweeps the cache
 * at most once an hour (the mtime of the marker file `.swept` says when it last did, so the other
 * CLIs starting in that hour pay one stat): an entry nobody read or wrote for a week goes, and
 * past `maxFiles` files the least recently used go, down to half of it. A CLI starting beside
 * another one so never loses the entries that one is reading (one CI pass leaves about 300).
 */
export const CACHE_SWEEP = {
  everyMs: 3_600_000,
  unusedForMs: 7 * 86_400_000,
  maxFiles: 4096,
  marker: '.swept',
} as const;

/** Why `dir` (absolute) may not hold code root runs, or undefined when it may. */
export function unsafeCacheDir(dir: string): string | undefined {
  let current = '/';
  for (const part of ['', ...dir.split('/').filter(Boolean)]) {
    current = path.join(current, part);
    let stats: fs.Stats;
    try {
      stats = fs.lstatSync(current);
    } catch (error) {
      return `cannot stat ${current}: ${(error as Error).message}`;
    }
    if (!stats.isDirectory()) return `${current} is not a directory`;
    if (stats.uid !== 0) return `${current} is owned by uid ${stats.uid}, not root`;
    if ((stats.mode & 0o022) !== 0) return `${current} is writable by group or others`;
  }
  return undefined;
}

/**
 * Make `dir` one level at a time, each level checked before the next is made (never through a
 * link or a directory someone else could swap), the last one 0700: nothing inside can be
 * reached by another user whatever the modes Node.js gives what it creates there (its umask).
 * A last level that was open to group or others is emptied: what is in it cannot be trusted.
 */
function ensureCacheDir(dir: string): boolean {
  let current = '/';
  for (const part of dir.split('/').filter(Boolean)) {
    current = path.join(current, part);
    if (!fs.existsSync(current)) fs.mkdirSync(current, { mode: 0o700 });
    if (unsafeCacheDir(current) !== undefined) return false;
  }
  if ((fs.lstatSync(dir).mode & 0o077) !== 0) {
    fs.chmodSync(dir, 0o700);
    emptyDir(dir);
  }
  return true;
}

function emptyDir(dir: string): void {
  for (const entry of fs.readdirSync(dir)) fs.rmSync(path.join(dir, entry), { recursive: true, force: true });
}

interface CacheFile {
  file: string;
  /** When it was last read or written: its atime moves on a read at least once a day (relatime). */
  usedMs: number;
}

/**
 * The files under `dir` (Node.js's version directories, then their entries), or undefined when
 * an entry is not what Node.js (or the sweep's marker) makes there: the cache then starts over.
 */
function cacheFiles(dir: string): CacheFile[] | undefined {
  const files: CacheFile[] = [];
  for (const entry of fs.readdirSync(dir)) {
    const stats = fs.lstatSync(path.join(dir, entry));
    if (stats.uid !== 0) return undefined;
    if (entry === CACHE_SWEEP.marker) {
      if (stats.isFile()) continue;
      return undefined;
    }
    if (!stats.isDirectory()) return undefined;
    for (const name of fs.readdirSync(path.join(dir, entry))) {
      const file = path.join(dir, entry, name);
      const { atimeMs, mtimeMs } = fs.lstatSync(file);
      files.push({ file, usedMs: Math.max(atimeMs, mtimeMs) });
    }
  }
  return files;
}

/** Sweep the cache when the last sweep is an hour old (or unknown): see CACHE_SWEEP. */
function sweepCache(dir: string, now: number = Date.now()): void {
  const marker = path.join(dir, CACHE_SWEEP.marker);
  const last = fs.lstatSync(marker, { throwIfNoEntry: false });
  if (last?.isFile() && last.mtimeMs <= now && now - last.mtimeMs < CACHE_SWEEP.everyMs) return;
  const files = cacheFiles(dir);
  if (files === undefined) emptyDir(dir);
  else {
    const kept = files.filter(({ file, usedMs }) => {
      if (now - usedMs < CACHE_SWEEP.unusedForMs) return true;
      fs.rmSync(file, { force: true });
      return false;
    });
    if (kept.length > CACHE_SWEEP.maxFiles) {
      kept.sort((a, b) => b.usedMs - a.usedMs);
      for (const { file } of kept.slice(CACHE_SWEEP.maxFiles / 2)) fs.rmSync(file, { force: true });
    }
  }
  const fd = fs.openSync(
    marker,
    fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW,
    0o600,
  );
  try {
    fs.futimesSync(fd, now / 1000, now / 1000);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Turn the compile cache on for the modules this process loads from now on, when it runs as
 * root and the cache directory is safe. Returns the directory, or undefined when it is off
 * (or on somewhere else: `NODE_COMPILE_CACHE` in root's environment is Node.js's own setting,
 * taken before this code runs). Never throws: the cache is a speed-up, and a command runs the
 * same without it.
 */
export function enableCompileCache(dir: string = COMPILE_CACHE_DIR): string | undefined {
  if (process.geteuid?.() !== 0 || typeof module.enableCompileCache !== 'function') return undefined;
  try {
    if (!ensureCacheDir(dir)) return undefined;
    sweepCache(dir);
    const result = module.enableCompileCache(dir);
    const { ENABLED, ALREADY_ENABLED } = module.constants.compileCacheStatus;
    if (result.status !== ENABLED && result.status !== ALREADY_ENABLED) return undefined;
    // Already on (NODE_COMPILE_CACHE), Node.js names its versioned directory: ours, or not.
    const where = path.resolve(result.directory ?? '/');
    return where === dir || where.startsWith(`${dir}/`) ? dir : undefined;
  } catch {
    return undefined;
  }
}
