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
 * checkout of it) adds its chunks again. Past this many files the oldest go, down to half of it:
 * the entries a running build uses are among the newest, so a CLI starting beside another one
 * does not lose the cache it is reading.
 */
const MAX_CACHE_FILES = 512;

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

/**
 * The files under `dir` (Node.js's version directories, then their entries), or undefined when
 * an entry is not what Node.js makes there (a root-owned directory): the cache then starts over.
 */
function cacheFiles(dir: string): { file: string; mtimeMs: number }[] | undefined {
  const files: { file: string; mtimeMs: number }[] = [];
  for (const entry of fs.readdirSync(dir)) {
    const stats = fs.lstatSync(path.join(dir, entry));
    if (!stats.isDirectory() || stats.uid !== 0) return undefined;
    for (const name of fs.readdirSync(path.join(dir, entry))) {
      const file = path.join(dir, entry, name);
      files.push({ file, mtimeMs: fs.lstatSync(file).mtimeMs });
    }
  }
  return files;
}

/** Keep the cache under MAX_CACHE_FILES: the oldest entries go (or all, for a foreign entry). */
function pruneCache(dir: string): void {
  const files = cacheFiles(dir);
  if (files === undefined) {
    emptyDir(dir);
    return;
  }
  if (files.length <= MAX_CACHE_FILES) return;
  files.sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const { file } of files.slice(MAX_CACHE_FILES / 2)) fs.rmSync(file, { force: true });
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
    pruneCache(dir);
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
