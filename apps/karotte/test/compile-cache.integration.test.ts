// The CLI's compile cache (src/compile-cache.ts), as root: it is used only in a directory only
// root can write, the built CLI fills it and reads it back, and another user's CLI never
// touches it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { CACHE_SWEEP, COMPILE_CACHE_DIR, enableCompileCache, unsafeCacheDir } from '../src/compile-cache.js';
import { asUid, tempDir } from '../../../test/support/index.js';

const app = path.resolve(import.meta.dirname, '..');
const cli = path.join(app, 'dist', 'cli.js');
const task = path.join(app, 'examples', 'quarterly-revenue');

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory under /var/cache (root's, 0755): a place where a safe cache can be. */
function rootDir(): string {
  const dir = fs.mkdtempSync('/var/cache/karotte-test-compile-cache-');
  fs.chmodSync(dir, 0o700);
  made.push(dir);
  return dir;
}

/** Run `body` in a new Node.js (only PATH and `env`), with `cache` and `module` in scope; what it print()s. */
function inFreshNode(body: string, env: Record<string, string> = {}): unknown {
  const source = [
    `import * as cache from ${JSON.stringify(pathToFileURL(path.join(app, 'src', 'compile-cache.ts')).href)};`,
    "import module from 'node:module';",
    'const print = (value) => process.stdout.write(JSON.stringify(value));',
    body,
  ].join('\n');
  const run = spawnSync(
    process.execPath,
    ['--experimental-strip-types', '--input-type=module', '-e', source],
    {
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', ...env },
    },
  );
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as unknown;
}

/** The compile cache's own account of what it read and wrote (Node.js's debug output). */
function cacheLog(argv: readonly string[]): string {
  const run = spawnSync(argv[0]!, argv.slice(1), {
    encoding: 'utf8',
    env: { PATH: '/usr/bin:/bin', NODE_DEBUG_NATIVE: 'COMPILE_CACHE' },
  });
  expect(run.status, run.stderr).toBe(0);
  return run.stderr;
}

describe('the compile cache', () => {
  it('is refused in a directory another user owns or that group or others can write', () => {
    const dir = rootDir();
    expect(unsafeCacheDir(dir)).toBeUndefined();
    fs.chmodSync(dir, 0o770);
    expect(unsafeCacheDir(dir)).toBe(`${dir} is writable by group or others`);
    fs.chmodSync(dir, 0o700);
    fs.chownSync(dir, 65534, 65534);
    expect(unsafeCacheDir(dir)).toBe(`${dir} is owned by uid 65534, not root`);
    // And so is a safe directory below one of those: whoever owns it can swap what is below.
    const inner = path.join(dir, 'cache');
    fs.mkdirSync(inner, { mode: 0o700 });
    expect(unsafeCacheDir(inner)).toBe(`${dir} is owned by uid 65534, not root`);
    expect(enableCompileCache(inner)).toBeUndefined();
  });

  it('is refused through a link, and never made through one', () => {
    const dir = rootDir();
    const real = path.join(dir, 'real');
    fs.mkdirSync(real, { mode: 0o700 });
    const link = path.join(dir, 'link');
    fs.symlinkSync(real, link);
    expect(unsafeCacheDir(path.join(link, 'cache'))).toBe(`${link} is not a directory`);
    expect(enableCompileCache(path.join(link, 'cache'))).toBeUndefined();
    expect(fs.readdirSync(real)).toEqual([]);
  });

  // The two tests below turn the cache on, in a Node.js of their own: this test process may
  // have it on already (NODE_COMPILE_CACHE from the test command), and it cannot be turned off.
  it('closes a cache directory that was open to group or others, and empties it', () => {
    const dir = rootDir();
    fs.chmodSync(dir, 0o755);
    const planted = path.join(dir, 'v0-planted');
    fs.mkdirSync(planted, { mode: 0o777 });
    fs.writeFileSync(path.join(planted, 'entry'), 'not compiled by us');
    const seen = inFreshNode(`
      const enabled = cache.enableCompileCache(${JSON.stringify(dir)});
      print({ enabled, dir: module.getCompileCacheDir() });`);
    expect(seen).toEqual({ enabled: dir, dir: expect.stringContaining(`${dir}/`) });
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.existsSync(planted)).toBe(false);
  });

  it('sweeps at most once an hour: a week unused goes, and past maxFiles the least recently used, down to half', () => {
    const dir = rootDir();
    const entries = path.join(dir, 'v0-entries');
    fs.mkdirSync(entries);
    const now = Date.now();
    const seconds = (ms: number): number => ms / 1000;
    const weekAgo = now - CACHE_SWEEP.unusedForMs - 3_600_000;
    const total = CACHE_SWEEP.maxFiles + 104;
    for (let i = 0; i < total; i += 1) {
      const file = path.join(entries, String(i));
      fs.writeFileSync(file, '');
      // 0-99 unused for over a week; 100 written then, read a moment ago; the rest used in the
      // last day, the higher the later.
      if (i < 100) fs.utimesSync(file, seconds(weekAgo), seconds(weekAgo));
      else if (i === 100) fs.utimesSync(file, seconds(now - 1000), seconds(weekAgo));
      else fs.utimesSync(file, seconds(now - 86_400_000 + i * 1000), seconds(now - 86_400_000 + i * 1000));
    }
    // NODE_COMPILE_CACHE elsewhere: the sweep still runs, and the cache is said off.
    const elsewhere = rootDir();
    const sweep = (): unknown =>
      inFreshNode(
        `print({ enabled: cache.enableCompileCache(${JSON.stringify(dir)}) ?? null, dir: module.getCompileCacheDir() });`,
        { NODE_COMPILE_CACHE: elsewhere },
      );
    expect(sweep()).toEqual({ enabled: null, dir: expect.stringContaining(`${elsewhere}/`) });
    const left = fs
      .readdirSync(entries)
      .map(Number)
      .sort((x, y) => x - y);
    expect(left).toHaveLength(CACHE_SWEEP.maxFiles / 2);
    expect(left[0]).toBe(100);
    expect(left[1]).toBe(total - CACHE_SWEEP.maxFiles / 2 + 1);
    const marker = fs.lstatSync(path.join(dir, CACHE_SWEEP.marker));
    expect(marker.isFile() && marker.mode & 0o777).toBe(0o600);
    // Swept a moment ago: the next CLI leaves an old entry alone...
    const old = path.join(entries, 'old');
    fs.writeFileSync(old, '');
    fs.utimesSync(old, seconds(weekAgo), seconds(weekAgo));
    sweep();
    expect(fs.existsSync(old)).toBe(true);
    // ...until the last sweep is an hour old.
    const hourAgo = seconds(now - CACHE_SWEEP.everyMs - 1000);
    fs.utimesSync(path.join(dir, CACHE_SWEEP.marker), hourAgo, hourAgo);
    sweep();
    expect(fs.existsSync(old)).toBe(false);
    expect(fs.readdirSync(entries)).toHaveLength(CACHE_SWEEP.maxFiles / 2);
  });

  it('starts over when the cache holds what Node.js does not make there', () => {
    for (const plant of [
      (dir: string) => fs.writeFileSync(path.join(dir, 'planted'), ''),
      (dir: string) => fs.mkdirSync(path.join(dir, CACHE_SWEEP.marker)),
      (dir: string) => fs.symlinkSync('/etc', path.join(dir, CACHE_SWEEP.marker)),
    ]) {
      const dir = rootDir();
      fs.mkdirSync(path.join(dir, 'v0-entries'));
      fs.writeFileSync(path.join(dir, 'v0-entries', 'entry'), '');
      plant(dir);
      expect(inFreshNode(`print(cache.enableCompileCache(${JSON.stringify(dir)}) ?? null);`)).toBe(dir);
      // Emptied, then the marker made afresh (and Node.js's own version directory).
      const left = fs.readdirSync(dir);
      expect(left).toContain(CACHE_SWEEP.marker);
      expect(left).not.toContain('v0-entries');
      expect(left).not.toContain('planted');
      expect(fs.lstatSync(path.join(dir, CACHE_SWEEP.marker)).isFile()).toBe(true);
    }
  });

  it("is filled and read back by root's CLI, and never touched by another user's", () => {
    expect(process.getuid?.()).toBe(0);
    cacheLog([process.execPath, cli, 'validate', '--task', task]);
    // The second run reads the chunks the first one wrote (or found) and V8 accepts them.
    const second = cacheLog([process.execPath, cli, 'validate', '--task', task]);
    expect(second).toContain(`[compile cache] resolved path ${COMPILE_CACHE_DIR}`);
    // Node.js 24 says "V8 code cache for ESM file://…", 22 "cache for file://…".
    expect(second).toMatch(/cache for (ESM )?file:\/\/\S+\/dist\/chunk-\S+\.js was accepted/);
    // Another user runs a copy of the CLI and the task it can read (the checkout may be 0700).
    const { dir: copy, cleanup } = tempDir('compile-cache-other');
    onTestFinished(cleanup);
    fs.chmodSync(copy, 0o755);
    fs.cpSync(path.join(app, 'dist'), path.join(copy, 'dist'), { recursive: true });
    fs.cpSync(task, path.join(copy, 'task'), { recursive: true });
    const other = cacheLog(
      asUid(65534, [
        process.execPath,
        path.join(copy, 'dist', 'cli.js'),
        'validate',
        '--task',
        path.join(copy, 'task'),
      ]),
    );
    expect(other).not.toContain('[compile cache]');
  });
});
