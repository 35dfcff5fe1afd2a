// takeCustody against a real unprivileged student: the student (a fresh uid, via setpriv)
// prepares every hostile file in a directory it owns; custody runs as root.
import { createHash, randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BadArgumentError } from '@karotte/base';
import { killUid, tempDir, testUid } from '../../../test/support/index.js';
import { asStudent, run, startStudent } from '../test/student.js';
import { inside, traceFs } from '../test/trace.js';
import type { Trace } from '../test/trace.js';
import { takeCustody } from './custody.js';
import type { CustodyResult } from './custody.js';
import { FileGuardError } from './errors.js';
import { custodyManifestSchema } from './manifest.js';
import type { CustodyOptions } from './options.js';

const MiB = 1024 * 1024;
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface World {
  uid: number;
  base: string;
  /** The student's working directory (the custody root), owned by the student. */
  work: string;
  /** A root-only directory holding the answer key. */
  secretDir: string;
  answerKey: string;
  canary: string;
  /** Where custody copies go (fresh, empty). */
  destParent: string;
  /** Run a script as the student with cwd = work. */
  student: (script: string, args?: readonly string[]) => string;
}

function world(): World {
  const uid = testUid();
  const { dir: base, cleanup } = tempDir('custody');
  cleanups.push(cleanup);
  // GNU rm walks descriptor-relative: it removes trees deeper than PATH_MAX, fs.rmSync cannot.
  cleanups.push(() => {
    run('/usr/bin/rm', ['-rf', '--one-file-system', base]);
  });
  cleanups.push(() => killUid(uid));
  fs.chmodSync(base, 0o755);
  const work = path.join(base, 'work');
  fs.mkdirSync(work);
  fs.chmodSync(work, 0o755);
  fs.chownSync(work, uid, uid);
  const secretDir = path.join(base, 'secret');
  fs.mkdirSync(secretDir, { mode: 0o700 });
  const canary = `karotte-canary-${randomBytes(16).toString('hex')}`;
  const answerKey = path.join(secretDir, 'answer-key');
  fs.writeFileSync(answerKey, `${canary}\n`, { mode: 0o600 });
  const destParent = path.join(base, 'custody');
  fs.mkdirSync(destParent, { mode: 0o700 });
  return {
    uid,
    base,
    work,
    secretDir,
    answerKey,
    canary,
    destParent,
    student: (script, args = []) => asStudent(uid, script, args, work),
  };
}

/** This checkout's installed modules (root-owned, never the student's). */
const HARNESS_MODULES = fs.realpathSync(path.resolve(import.meta.dirname, '../../../node_modules'));

/** Custody with a trace of every open and read; asserts the trace's invariants. */
async function custody(
  w: World,
  sources: Parameters<typeof takeCustody>[0],
  options: Partial<CustodyOptions> = {},
  alsoAllowed: readonly string[] = [],
): Promise<CustodyResult & { trace: Trace }> {
  const trace = traceFs(w.canary);
  let result: CustodyResult;
  try {
    result = await takeCustody(sources, {
      root: w.work,
      destinationParent: w.destParent,
      studentUid: w.uid,
      ...options,
    });
  } finally {
    trace.stop();
  }
  // Nothing outside the root was opened (only the root's ancestors, walked O_PATH, and our
  // own destination), and the answer key's content never reached memory.
  const ancestors = new Set(['/']);
  for (let dir = path.dirname(w.work); dir !== '/'; dir = path.dirname(dir)) ancestors.add(dir);
  for (const real of trace.opened) {
    const allowed =
      inside(real, w.work) ||
      inside(real, w.destParent) ||
      ancestors.has(real) ||
      real.startsWith(`/proc/${process.pid}/`) || // this process's own umask (status)
      // The harness's own code: file-type is loaded at the first binary custody types.
      (inside(real, HARNESS_MODULES) && /\.(c|m)?js$|package\.json$/.test(real)) ||
      alsoAllowed.some((dir) => inside(real, dir));
    expect(allowed, `opened ${real}`).toBe(true);
  }
  expect(trace.sawCanary()).toBe(false);
  // The manifest is valid and JSON-serialisable.
  const manifest = custodyManifestSchema.parse(JSON.parse(JSON.stringify(result.manifest)));
  expect(manifest).toEqual(result.manifest);
  if (!result.ok) {
    // A refused custody leaves no partial copy.
    expect(fs.readdirSync(w.destParent)).toEqual([]);
    expect(result.destination).toBeUndefined();
    expect(result.misbehavior.length).toBeGreaterThan(0);
  }
  return { ...result, trace };
}

/**
 * Run `hook` in front of every fs.openSync (a plain property swap, so the tracer's spy can
 * still wrap it). Returns a handle whose mockRestore() puts the original back.
 */
function hookOpenSync(hook: (real: typeof fs.openSync, ...args: Parameters<typeof fs.openSync>) => number): {
  mockRestore: () => void;
} {
  const original = fs.openSync;
  fs.openSync = (...args: Parameters<typeof fs.openSync>) => hook(original, ...args);
  return {
    mockRestore: () => {
      fs.openSync = original;
    },
  };
}

/**
 * Resolve once `child` printed `line` on stdout (a student started with startStudent says it
 * is running: node can take longer to start on a loaded machine than any fixed delay).
 */
function printed(child: ChildProcess, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes(`${line}\n`)) resolve();
    });
    child.on('exit', (code, signal) => {
      reject(
        new Error(`the student process exited (${String(code)} ${String(signal)}) before printing ${line}`),
      );
    });
  });
}

function codes(result: CustodyResult): string[] {
  return result.misbehavior.map((record) => record.code);
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

describe('takeCustody: the honest control', () => {
  it('copies files and trees root-only, with a manifest of sizes, hashes and types', async () => {
    const w = world();
    w.student(`
      fs.writeFileSync('answer.txt', '42\\n');
      fs.mkdirSync('src/lib', { recursive: true });
      fs.writeFileSync('src/main.py', 'print(1)\\n');
      fs.writeFileSync('src/lib/util.py', 'x = 1\\n');
      fs.writeFileSync('src/lib/blob.bin', Buffer.from([0, 1, 2, 3, 255]));
      fs.mkdirSync('src/empty');
    `);
    const result = await custody(w, ['answer.txt', 'src', 'never-written.txt']);
    expect(result.ok).toBe(true);
    const dest = result.destination!;
    expect(path.dirname(dest)).toBe(w.destParent);
    expect(fs.readFileSync(path.join(dest, 'answer.txt'), 'utf8')).toBe('42\n');
    expect(fs.readFileSync(path.join(dest, 'src/lib/util.py'), 'utf8')).toBe('x = 1\n');
    // Root-only: dirs 0700, files 0600, owned by the caller (root).
    for (const [rel, mode] of [
      ['.', 0o700],
      ['src', 0o700],
      ['src/lib', 0o700],
      ['src/empty', 0o700],
      ['answer.txt', 0o600],
      ['src/lib/blob.bin', 0o600],
    ] as const) {
      const stats = fs.lstatSync(path.join(dest, rel));
      expect(stats.mode & 0o7777, rel).toBe(mode);
      expect(stats.uid).toBe(0);
    }
    expect(result.manifest.absent).toEqual(['never-written.txt']);
    expect(fs.existsSync(path.join(dest, 'never-written.txt'))).toBe(false);
    expect(result.manifest.sources).toEqual([
      { path: 'answer.txt', status: 'copied', kind: 'file' },
      { path: 'src', status: 'copied', kind: 'directory' },
      { path: 'never-written.txt', status: 'absent' },
    ]);
    const byPath = Object.fromEntries(result.manifest.entries.map((entry) => [entry.path, entry]));
    expect(byPath['answer.txt']).toMatchObject({
      kind: 'file',
      size: 3,
      sha256: sha256('42\n'),
      type: { text: true },
    });
    expect(byPath['src/lib/blob.bin']).toMatchObject({ kind: 'file', size: 5, type: { text: false } });
    expect(byPath['src/empty']).toMatchObject({ kind: 'directory' });
    expect(result.manifest.totals).toEqual({
      files: 4,
      directories: 3,
      symlinks: 0,
      entries: 7,
      bytes: 3 + 9 + 6 + 5,
    });
    fs.rmSync(dest, { recursive: true });
  });

  it('copies hostile names safely and escapes them in every report', async () => {
    const w = world();
    w.student(`
      fs.mkdirSync('out');
      fs.writeFileSync('out/line\\nbreak.txt', 'a');
      fs.writeFileSync(Buffer.from('out/bad-\\xff\\xfe-utf8', 'latin1'), 'b');
      fs.writeFileSync('out/--help', 'c');
      fs.writeFileSync('out/-rf', 'd');
    `);
    const result = await custody(w, ['out']);
    expect(result.ok).toBe(true);
    const dest = result.destination!;
    const names = fs
      .readdirSync(path.join(dest, 'out'), { encoding: 'buffer' })
      .map((name) => name.toString('latin1'));
    expect(names.sort()).toEqual(['--help', '-rf', 'bad-\xff\xfe-utf8', 'line\nbreak.txt'].sort());
    const paths = result.manifest.entries.map((entry) => entry.path);
    expect(paths).toContain('out/line\\nbreak.txt');
    expect(paths).toContain('out/bad-\\xff\\xfe-utf8');
    for (const entry of result.manifest.entries) {
      expect(entry.path).not.toMatch(/[\n\r\u0000-\u001f]/);
      // rawPath names the exact bytes of the copy.
      const raw = Buffer.from(entry.rawPath, 'base64');
      expect(fs.existsSync(Buffer.concat([Buffer.from(`${dest}/`), raw]))).toBe(true);
    }
    fs.rmSync(dest, { recursive: true });
  });

  it('keeps sparse files sparse and counts their zeros toward the budgets', async () => {
    const w = world();
    w.student(`
      const fd = fs.openSync('sparse.bin', 'w');
      fs.writeSync(fd, Buffer.from('middle'), 0, 6, 20 * 1024 * 1024);
      fs.ftruncateSync(fd, 40 * 1024 * 1024);
      fs.closeSync(fd);
    `);
    const expected = Buffer.alloc(40 * MiB);
    expected.write('middle', 20 * MiB);
    const result = await custody(w, ['sparse.bin']);
    expect(result.ok).toBe(true);
    const copy = path.join(result.destination!, 'sparse.bin');
    const stats = fs.statSync(copy);
    expect(stats.size).toBe(40 * MiB);
    expect(stats.blocks * 512).toBeLessThan(4 * MiB);
    expect(result.manifest.entries[0]).toMatchObject({
      size: 40 * MiB,
      sparse: true,
      sha256: sha256(expected),
    });
    expect(sha256(fs.readFileSync(copy))).toBe(sha256(expected));
    fs.rmSync(result.destination!, { recursive: true });
    const tight = await custody(w, ['sparse.bin'], { maxTotalBytes: 30 * MiB });
    expect(codes(tight)).toEqual(['TOTAL_TOO_LARGE']);
  });

  it('a missing declared path is absent, not misbehavior', async () => {
    const w = world();
    const result = await custody(w, ['answer.txt', 'out/result.json']);
    expect(result.ok).toBe(true);
    expect(result.misbehavior).toEqual([]);
    expect(result.manifest.absent).toEqual(['answer.txt', 'out/result.json']);
    expect(fs.readdirSync(result.destination!)).toEqual([]);
  });
});

describe('takeCustody: links', () => {
  it.each([
    ['the answer key', (w: World) => w.answerKey],
    ['/dev/zero', () => '/dev/zero'],
    ['/proc/self/environ', () => '/proc/self/environ'],
    ['a dangling target', () => '/nonexistent/karotte'],
  ])('refuses answer.txt as a symlink to %s', async (_label, target) => {
    const w = world();
    w.student(`fs.symlinkSync(args[0], 'answer.txt')`, [target(w)]);
    const started = performance.now();
    const result = await custody(w, ['answer.txt']);
    // Bounded (a loaded CI machine included); following /dev/zero would never end.
    expect(performance.now() - started).toBeLessThan(5000);
    expect(result.ok).toBe(false);
    expect(result.misbehavior).toEqual([
      {
        code: 'SYMLINK',
        message: 'answer.txt is a symbolic link (links on a declared path are always refused)',
        path: 'answer.txt',
      },
    ]);
  });

  it('refuses a symlinked parent directory, even when inner links are allowed', async () => {
    const w = world();
    fs.chmodSync(w.secretDir, 0o711); // even a searchable target must not be reached
    w.student(`fs.symlinkSync(args[0], 'out')`, [w.secretDir]);
    for (const allowSymlinks of [false, true]) {
      for (const declared of ['out/answer-key', 'out']) {
        const result = await custody(w, [declared], { allowSymlinks });
        expect(codes(result)).toEqual(['SYMLINK']);
        expect(result.misbehavior[0]!.path).toBe('out');
      }
    }
  });

  it('refuses links inside a tree, and recreates (never follows) them when allowed', async () => {
    const w = world();
    w.student(
      `fs.mkdirSync('src/pkg', { recursive: true });
       fs.writeFileSync('src/pkg/real.txt', 'real');
       fs.symlinkSync('real.txt', 'src/pkg/alias.txt');
       fs.symlinkSync('../pkg/missing', 'src/pkg/dangling');
       fs.mkdirSync('evil'); fs.symlinkSync(args[0], 'evil/key'); fs.symlinkSync('../../..', 'evil/up');`,
      [w.answerKey],
    );
    expect(codes(await custody(w, ['src']))).toEqual(['SYMLINK']);

    const allowed = await custody(w, ['src'], { allowSymlinks: true });
    expect(allowed.ok).toBe(true);
    const dest = allowed.destination!;
    expect(fs.readlinkSync(path.join(dest, 'src/pkg/alias.txt'))).toBe('real.txt');
    expect(fs.readlinkSync(path.join(dest, 'src/pkg/dangling'))).toBe('../pkg/missing');
    expect(allowed.manifest.totals.symlinks).toBe(2);
    fs.rmSync(dest, { recursive: true });

    // Links that leave the declared directory are refused even when links are allowed.
    const evil = await custody(w, ['evil'], { allowSymlinks: true });
    expect(codes(evil)).toEqual(['SYMLINK']);
    expect(evil.misbehavior[0]!.message).toContain('pointing outside the submission');
  });

  it('refuses a root reached through a student link, and a missing root as tampering', async () => {
    const w = world();
    const other = path.join(w.base, 'student-home');
    fs.mkdirSync(other);
    fs.chownSync(other, w.uid, w.uid);
    asStudent(w.uid, `fs.symlinkSync(args[0], args[1])`, [w.work, path.join(other, 'work-link')]);
    const viaLink = await custody({ ...w, work: path.join(other, 'work-link') }, ['answer.txt']);
    expect(codes(viaLink)).toEqual(['SYMLINK']);

    const missing = await custody({ ...w, work: path.join(w.base, 'gone') }, ['answer.txt']);
    expect(codes(missing)).toEqual(['TAMPERING']);

    // A root reached through a root-owned link is a harness mistake, not the student's.
    const rootLink = path.join(w.base, 'root-link');
    fs.symlinkSync(w.work, rootLink);
    await expect(
      takeCustody(['a'], { root: rootLink, destinationParent: w.destParent }),
    ).rejects.toBeInstanceOf(BadArgumentError);
  });
});

describe('takeCustody: special files', () => {
  it('refuses a FIFO at once, declared or inside a tree', async () => {
    const w = world();
    w.student(`
      const { execFileSync } = require('node:child_process');
      execFileSync('/usr/bin/mkfifo', ['answer.txt']);
      fs.mkdirSync('out'); execFileSync('/usr/bin/mkfifo', ['out/pipe']);
    `);
    const started = performance.now();
    const declared = await custody(w, ['answer.txt']);
    const inTree = await custody(w, ['out']);
    // Opening a FIFO with no writer would block forever.
    expect(performance.now() - started).toBeLessThan(5000);
    expect(declared.misbehavior).toEqual([
      { code: 'NOT_REGULAR_FILE', message: 'answer.txt is not a regular file (a FIFO)', path: 'answer.txt' },
    ]);
    expect(inTree.misbehavior).toEqual([
      { code: 'NOT_REGULAR_FILE', message: 'out/pipe is not a regular file (a FIFO)', path: 'out/pipe' },
    ]);
  });

  it('refuses a socket', async () => {
    const w = world();
    w.student(`
      const net = require('node:net');
      const server = net.createServer();
      server.listen(path.join(process.cwd(), 'answer.txt'), () => { server.unref(); process.exit(0); });
    `);
    expect(fs.lstatSync(path.join(w.work, 'answer.txt')).isSocket()).toBe(true);
    const result = await custody(w, ['answer.txt']);
    expect(result.misbehavior[0]).toMatchObject({
      code: 'NOT_REGULAR_FILE',
      message: 'answer.txt is not a regular file (a socket)',
    });
  });

  it('refuses device nodes (made by root in the student directory to simulate)', async () => {
    const w = world();
    w.student(`fs.mkdirSync('out')`);
    run('/usr/bin/mknod', [path.join(w.work, 'zero'), 'c', '1', '5']);
    run('/usr/bin/mknod', [path.join(w.work, 'out', 'loop'), 'b', '7', '0']);
    const declared = await custody(w, ['zero']);
    const inTree = await custody(w, ['out']);
    expect(declared.misbehavior[0]).toMatchObject({
      code: 'NOT_REGULAR_FILE',
      message: 'zero is not a regular file (a character device)',
    });
    expect(inTree.misbehavior[0]).toMatchObject({
      code: 'NOT_REGULAR_FILE',
      message: 'out/loop is not a regular file (a block device)',
    });
  });

  it('refuses a hard link to a root-only file (made by root: protected_hardlinks stops the student)', async () => {
    const w = world();
    fs.linkSync(w.answerKey, path.join(w.work, 'answer.txt'));
    const result = await custody(w, ['answer.txt']);
    expect(result.misbehavior[0]).toMatchObject({ code: 'HARD_LINK', path: 'answer.txt' });
    expect(result.misbehavior[0]!.message).toContain('owned by uid 0');
  });

  it('allows hard links among the student’s own files only when the student uid is known', async () => {
    const w = world();
    w.student(`fs.writeFileSync('a.txt', 'mine'); fs.linkSync('a.txt', 'b.txt');`);
    expect((await custody(w, ['a.txt', 'b.txt'])).ok).toBe(true);
    fs.rmSync(w.destParent, { recursive: true });
    fs.mkdirSync(w.destParent, { mode: 0o700 });
    const trace = traceFs(w.canary);
    const unknown = await takeCustody(['a.txt'], { root: w.work, destinationParent: w.destParent }).finally(
      trace.stop,
    );
    expect(codes(unknown)).toEqual(['HARD_LINK']);
  });
});

describe('takeCustody: budgets', () => {
  it('refuses a 100 GB sparse file in milliseconds, before reading a byte', async () => {
    const w = world();
    w.student(
      `fs.closeSync(fs.openSync('answer.txt', 'w')); fs.truncateSync('answer.txt', 100 * 1024 ** 3);`,
    );
    const result = await custody(w, ['answer.txt']);
    expect(result.misbehavior).toEqual([
      {
        code: 'FILE_TOO_LARGE',
        message: 'answer.txt is too large (107374182400 bytes > 268435456)',
        path: 'answer.txt',
      },
    ]);
    // Refused on its size, before a byte is read: reading 100 GB would take minutes.
    expect(result.manifest.durationMs).toBeLessThan(3000);
  });

  it('accepts a file of exactly the per-file budget and refuses one byte more', async () => {
    const w = world();
    w.student(`
      for (const [name, size] of [['under.bin', 256 * 1024 * 1024], ['over.bin', 256 * 1024 * 1024 + 1]]) {
        const fd = fs.openSync(name, 'w'); fs.writeSync(fd, 'x', 0); fs.ftruncateSync(fd, size); fs.closeSync(fd);
      }
    `);
    const under = await custody(w, ['under.bin']);
    expect(under.ok).toBe(true);
    expect(fs.statSync(path.join(under.destination!, 'under.bin')).size).toBe(256 * MiB);
    fs.rmSync(under.destination!, { recursive: true });
    const over = await custody(w, ['over.bin']);
    expect(codes(over)).toEqual(['FILE_TOO_LARGE']);
  });

  it('refuses 10,001 entries and accepts 10,000', async () => {
    const w = world();
    w.student(`
      fs.mkdirSync('ok'); for (let i = 0; i < 9999; i++) fs.writeFileSync('ok/f' + i, '');
      fs.mkdirSync('big'); for (let i = 0; i < 10000; i++) fs.writeFileSync('big/f' + i, '');
    `);
    const ok = await custody(w, ['ok']);
    expect(ok.ok).toBe(true);
    expect(ok.manifest.totals.entries).toBe(10_000);
    fs.rmSync(ok.destination!, { recursive: true });
    const big = await custody(w, ['big']);
    expect(big.misbehavior).toEqual([
      {
        code: 'TOO_MANY_ENTRIES',
        message: 'big is past the budget: the submission has more than 10000 entries',
        path: 'big',
      },
    ]);
  });

  it('refuses depth 33 and accepts depth 32', async () => {
    const w = world();
    w.student(`
      for (const [top, depth] of [['ok', 32], ['deep', 33]]) {
        let p = top; fs.mkdirSync(p);
        for (let i = 1; i < depth; i++) { p += '/d'; fs.mkdirSync(p); }
        fs.writeFileSync(p + '/leaf', 'x');
      }
    `);
    const ok = await custody(w, ['ok']);
    expect(ok.ok).toBe(true);
    fs.rmSync(ok.destination!, { recursive: true });
    const deep = await custody(w, ['deep']);
    expect(codes(deep)).toEqual(['TOO_DEEP']);
    expect(deep.misbehavior[0]!.message).toContain('nested deeper than 32 levels');
  });

  it('refuses a tree 10,000 deep at depth 33, without walking the rest', async () => {
    const w = world();
    w.student(
      `fs.mkdirSync('deep'); process.chdir('deep'); for (let i = 0; i < 10000; i++) { fs.mkdirSync('d'); process.chdir('d'); }`,
    );
    const result = await custody(w, ['deep']);
    expect(codes(result)).toEqual(['TOO_DEEP']);
    expect(result.manifest.durationMs).toBeLessThan(5000);
  });

  it('refuses a 4,096-byte path', async () => {
    const w = world();
    w.student(`
      fs.mkdirSync('long'); process.chdir('long');
      const name = 'n'.repeat(240);
      let total = 'long'.length;
      while (total < 4096) { fs.mkdirSync(name); process.chdir(name); total += 1 + name.length; }
      fs.writeFileSync('leaf', 'x');
    `);
    const result = await custody(w, ['long']);
    expect(codes(result)).toEqual(['NAME_TOO_LONG']);
    expect(result.misbehavior[0]!.message).toMatch(/has a path of \d+ bytes \(limit 3072\)/);
  });

  it('refuses a name over maxNameBytes', async () => {
    const w = world();
    w.student(`fs.mkdirSync('out'); fs.writeFileSync('out/' + 'x'.repeat(200), '')`);
    expect(codes(await custody(w, ['out'], { maxNameBytes: 100 }))).toEqual(['NAME_TOO_LONG']);
  });

  it('stops every remaining path after a global budget overrun', async () => {
    const w = world();
    w.student(
      `fs.writeFileSync('a', Buffer.alloc(600)); fs.writeFileSync('b', Buffer.alloc(600)); fs.writeFileSync('c', 'x');`,
    );
    const result = await custody(w, ['a', 'b', 'c'], { maxTotalBytes: 1000 });
    expect(codes(result)).toEqual(['TOTAL_TOO_LARGE']);
    expect(result.manifest.sources.map((source) => source.status)).toEqual(['copied', 'refused', 'skipped']);
  });
});

describe('takeCustody: file types', () => {
  const PNG = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
    'base64',
  );

  it('refuses an archive (tar.gz, zip) where only text is allowed', async () => {
    const w = world();
    w.student(`
      fs.writeFileSync('notes.txt', 'hello');
      require('node:child_process').execFileSync('/usr/bin/tar', ['czf', 'answer.txt', 'notes.txt']);
      const zip = Buffer.alloc(64); zip.write('PK\\x03\\x04', 0, 'latin1'); zip.writeUInt16LE(20, 4); zip.writeUInt16LE(5, 26); zip.write('a.txt', 30);
      fs.writeFileSync('other.txt', zip);
    `);
    const gz = await custody(w, [{ path: 'answer.txt', type: { allow: ['text'] } }]);
    expect(gz.misbehavior[0]).toMatchObject({ code: 'WRONG_FILE_TYPE', path: 'answer.txt' });
    expect(gz.misbehavior[0]!.message).toContain('application/gzip');
    const zip = await custody(w, ['other.txt'], { type: { deny: ['archive'] } });
    expect(zip.misbehavior[0]).toMatchObject({ code: 'WRONG_FILE_TYPE' });
    expect(zip.misbehavior[0]!.message).toContain('application/zip');
    const text = await custody(w, [{ path: 'notes.txt', type: { allow: ['text'], deny: ['archive'] } }]);
    expect(text.ok).toBe(true);
  });

  it('checks PNG by magic number, not by name', async () => {
    const w = world();
    w.student(
      `fs.writeFileSync('plot.png', Buffer.from(args[0], 'base64')); fs.writeFileSync('fake.png', 'not a png');`,
      [PNG.toString('base64')],
    );
    const real = await custody(w, [{ path: 'plot.png', type: { allow: ['image/png'] } }]);
    expect(real.ok).toBe(true);
    expect(real.manifest.entries[0]!.type).toEqual({ mime: 'image/png', ext: 'png', text: false });
    fs.rmSync(real.destination!, { recursive: true });
    const fake = await custody(w, [{ path: 'fake.png', type: { allow: ['image/*'] } }]);
    expect(fake.misbehavior[0]!.message).toBe('fake.png is text/plain, text; the task allows only image/*');
  });
});

describe('takeCustody: the destination', () => {
  it('a full destination (ENOSPC) is misbehavior and leaves nothing behind', async () => {
    const w = world();
    const small = path.join(w.base, 'small');
    fs.mkdirSync(small, { mode: 0o700 });
    run('/usr/bin/mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'karotte-custody-tmpfs', small]);
    cleanups.push(() => {
      run('/usr/bin/umount', ['-l', small]);
    });
    w.student(`fs.writeFileSync('answer.txt', require('node:crypto').randomBytes(3 * 1024 * 1024))`);
    const result = await custody({ ...w, destParent: small }, ['answer.txt'], { destinationParent: small });
    expect(result.misbehavior[0]).toMatchObject({ code: 'CANNOT_SAVE', path: 'answer.txt' });
    expect(result.misbehavior[0]!.message).toContain('ENOSPC');
    expect(fs.readdirSync(small)).toEqual([]);
  });

  it('refuses an explicit destination that exists (a harness bug, not the student)', async () => {
    const w = world();
    const dest = path.join(w.destParent, 'exists');
    fs.mkdirSync(dest);
    await expect(takeCustody([], { root: w.work, destination: dest })).rejects.toSatisfy(
      (error: unknown) => error instanceof FileGuardError && error.code === 'DESTINATION_EXISTS',
    );
  });

  it('refuses a destination inside the root and overlapping sources', async () => {
    const w = world();
    await expect(takeCustody(['a'], { root: w.work, destinationParent: w.work })).rejects.toBeInstanceOf(
      BadArgumentError,
    );
    await expect(
      takeCustody(['a', 'a/b'], { root: w.work, destinationParent: w.destParent }),
    ).rejects.toBeInstanceOf(BadArgumentError);
  });

  it('removes the partial copy when aborted', async () => {
    const w = world();
    w.student(`for (let i = 0; i < 200; i++) fs.writeFileSync('f' + i, Buffer.alloc(64 * 1024, 1));`);
    const controller = new AbortController();
    const names = Array.from({ length: 200 }, (_, i) => `f${i}`);
    const promise = takeCustody(names, {
      root: w.work,
      destinationParent: w.destParent,
      abortSignal: controller.signal,
    });
    controller.abort();
    await expect(promise).rejects.toSatisfy(
      (error: unknown) => error instanceof FileGuardError && error.code === 'ABORTED',
    );
    expect(fs.readdirSync(w.destParent)).toEqual([]);
  });
});

describe('takeCustody: races with a live student', () => {
  it('never copies a link target while the student swaps files and directories for links', async () => {
    const w = world();
    const elsewhere = path.join(w.base, 'elsewhere');
    fs.mkdirSync(elsewhere);
    fs.chownSync(elsewhere, w.uid, w.uid);
    w.student(
      `fs.mkdirSync('dir'); fs.writeFileSync('dir/inner.txt', 'honest'); fs.writeFileSync('victim.txt', 'honest');`,
    );
    const racer = startStudent(
      w.uid,
      `process.chdir(args[0]);
       const key = args[1], secretDir = args[2], elsewhere = args[3];
       for (let i = 0; ; i++) {
         try {
           fs.symlinkSync(key, 'tmp-link'); fs.renameSync('tmp-link', 'victim.txt');
           fs.writeFileSync('tmp-file', 'honest'); fs.renameSync('tmp-file', 'victim.txt');
           fs.renameSync('dir', 'dir-away'); fs.symlinkSync(secretDir, 'dir');
           fs.unlinkSync('dir'); fs.renameSync('dir-away', 'dir');
           if (i % 2 === 0) { fs.renameSync('dir', elsewhere + '/dir'); fs.renameSync(elsewhere + '/dir', 'dir'); }
         } catch {}
         if (i === 0) process.stdout.write('racing\\n');
       }`,
      [w.work, w.answerKey, w.secretDir, elsewhere],
    );
    cleanups.push(() => {
      racer.kill('SIGKILL');
    });
    // On a loaded machine the racer must still get the CPU to race at all.
    run('/usr/bin/renice', ['-n', '-10', '-p', String(racer.pid)]);
    // And it must have started: 300 copies can all end before a node starts on a loaded machine.
    await printed(racer, 'racing');
    const outcomes = new Map<string, number>();
    for (let iteration = 0; iteration < 300; iteration += 1) {
      // The student's own directory may be moved to `elsewhere` mid-copy: opening it there is
      // allowed (it is the student's content); reading the answer key never is.
      const result = await custody(w, ['victim.txt', 'dir'], {}, [elsewhere]);
      const key = result.ok ? 'ok' : codes(result).join('+');
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      if (result.ok) {
        // Whatever was copied is the student's own content, never the answer key.
        for (const entry of result.manifest.entries) {
          if (entry.kind !== 'file') continue;
          const copy = fs.readFileSync(path.join(result.destination!, entry.path));
          expect(copy.includes(w.canary)).toBe(false);
          expect(copy.toString()).toBe('honest');
        }
        fs.rmSync(result.destination!, { recursive: true });
      }
    }
    // The race really happened: some attempts were refused, and the refusals are the right kind.
    const refusedKinds = [...outcomes.keys()].filter((key) => key !== 'ok').flatMap((key) => key.split('+'));
    expect(refusedKinds.length).toBeGreaterThan(0);
    for (const kind of refusedKinds) {
      expect([
        'SYMLINK',
        'CHANGED_DURING_COPY',
        'ESCAPED_ROOT',
        'NOT_DIRECTORY',
        'NOT_REGULAR_FILE',
      ]).toContain(kind);
    }
    console.log('race outcomes', Object.fromEntries(outcomes));
  });

  it('refuses a file swapped for a link between listing and open (deterministic race)', async () => {
    const w = world();
    w.student(`fs.mkdirSync('out'); fs.writeFileSync('out/victim.txt', 'honest'); fs.mkdirSync('out/dir');`);
    let swapped = 0;
    // Swap right before custody opens the entry: the student's best possible timing.
    const spy = hookOpenSync((realOpenSync, ...args) => {
      const target = args[0].toString();
      const real = path.join(w.work, 'out', path.basename(target));
      if (
        (target.endsWith('/victim.txt') || target.endsWith('/dir')) &&
        !fs.lstatSync(real).isSymbolicLink()
      ) {
        fs.rmSync(real, { recursive: true });
        fs.symlinkSync(target.endsWith('/dir') ? w.secretDir : w.answerKey, real);
        swapped += 1;
      }
      return realOpenSync(...args);
    });
    let result: Awaited<ReturnType<typeof custody>>;
    try {
      result = await custody(w, ['out']);
    } finally {
      spy.mockRestore();
    }
    expect(swapped).toBe(1); // 'dir' sorts before 'victim.txt' and is refused first
    expect(result.misbehavior).toEqual([
      { code: 'SYMLINK', message: 'out/dir is a symbolic link', path: 'out/dir' },
    ]);

    fs.unlinkSync(path.join(w.work, 'out', 'dir'));
    const spy2 = hookOpenSync((realOpenSync, ...args) => {
      const target = args[0].toString();
      if (target.endsWith('/victim.txt') && fs.lstatSync(path.join(w.work, 'out/victim.txt')).isFile()) {
        fs.rmSync(path.join(w.work, 'out/victim.txt'));
        fs.symlinkSync(w.answerKey, path.join(w.work, 'out/victim.txt'));
      }
      return realOpenSync(...args);
    });
    try {
      result = await custody(w, ['out']);
    } finally {
      spy2.mockRestore();
    }
    expect(result.misbehavior).toEqual([
      { code: 'SYMLINK', message: 'out/victim.txt is a symbolic link', path: 'out/victim.txt' },
    ]);
  });

  it('refuses a directory moved outside the root while it is copied (ESCAPED_ROOT)', async () => {
    const w = world();
    const elsewhere = path.join(w.base, 'elsewhere');
    fs.mkdirSync(elsewhere);
    w.student(`fs.mkdirSync('out'); fs.writeFileSync('out/inner.txt', 'honest');`);
    let moved = false;
    const spy = hookOpenSync((realOpenSync, ...args) => {
      if (!moved && args[0].toString().endsWith('/inner.txt')) {
        fs.renameSync(path.join(w.work, 'out'), path.join(elsewhere, 'out'));
        moved = true;
      }
      return realOpenSync(...args);
    });
    let result: Awaited<ReturnType<typeof custody>>;
    try {
      result = await custody(w, ['out'], {}, [elsewhere]);
    } finally {
      spy.mockRestore();
    }
    expect(moved).toBe(true);
    expect(result.misbehavior[0]).toMatchObject({ code: 'ESCAPED_ROOT', path: 'out/inner.txt' });
  });

  it('refuses a file that changes while it is copied', async () => {
    const w = world();
    w.student(`fs.writeFileSync('answer.txt', Buffer.alloc(64 * 1024 * 1024, 0x61))`);
    const writer = startStudent(
      w.uid,
      `const fd = fs.openSync(args[0], 'r+'); let i = 0;
       fs.writeSync(fd, Buffer.from([0x62]), 0, 1, 0); process.stdout.write('writing\\n');
       for (;;) { fs.writeSync(fd, Buffer.from([0x62 + (i++ % 20)]), 0, 1, (i * 4096) % (64 * 1024 * 1024)); }`,
      [path.join(w.work, 'answer.txt')],
    );
    cleanups.push(() => {
      writer.kill('SIGKILL');
    });
    run('/usr/bin/renice', ['-n', '-10', '-p', String(writer.pid)]);
    // Copy only once the writer is writing: five copies could all end before its first write.
    await printed(writer, 'writing');
    let refusedChanged = 0;
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const result = await custody(w, ['answer.txt']);
      if (result.ok) fs.rmSync(result.destination!, { recursive: true });
      else {
        expect(codes(result)).toEqual(['CHANGED_DURING_COPY']);
        refusedChanged += 1;
      }
    }
    expect(refusedChanged).toBeGreaterThan(0);
  });

  it('copies a directory the student made unreadable (root reads it; the student cannot)', async () => {
    const w = world();
    w.student(
      `fs.mkdirSync('locked'); fs.writeFileSync('locked/answer.txt', '7'); fs.chmodSync('locked', 0);`,
    );
    const result = await custody(w, ['locked']);
    expect(result.ok).toBe(true);
    expect(fs.readFileSync(path.join(result.destination!, 'locked/answer.txt'), 'utf8')).toBe('7');
  });
});
