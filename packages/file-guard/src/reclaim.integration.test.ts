import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BadArgumentError } from '@karotte/base';
import { killUid, tempDir, testUid } from '../../../test/support/index.js';
import { asStudent, run } from '../test/student.js';
import { reclaim } from './reclaim.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A root-owned base dir with a student-owned `work` dir inside, and a precious dir outside. */
function setup(): { base: string; work: string; precious: string; uid: number } {
  const uid = testUid();
  const { dir: base, cleanup } = tempDir('reclaim');
  cleanups.push(cleanup);
  cleanups.push(() => killUid(uid));
  fs.chmodSync(base, 0o755);
  const work = path.join(base, 'work');
  const precious = path.join(base, 'precious');
  fs.mkdirSync(work, { mode: 0o755 });
  fs.chownSync(work, uid, uid);
  fs.mkdirSync(precious);
  fs.chmodSync(precious, 0o777);
  fs.writeFileSync(path.join(precious, 'secret'), 'root secret');
  // A file the student owns but outside the swept roots: must survive.
  asStudent(uid, `fs.writeFileSync(args[0], 'student file outside the roots')`, [
    path.join(precious, 'theirs'),
  ]);
  return { base, work, precious, uid };
}

describe('reclaim (real uid, real files)', () => {
  it('removes what the uid owns, bottom-up, and nothing else', async () => {
    const { work, precious, uid } = setup();
    asStudent(
      uid,
      `
      process.chdir(args[0]);
      fs.mkdirSync('a/b/c', { recursive: true });
      fs.writeFileSync('a/b/c/f.txt', 'x');
      fs.writeFileSync('top.txt', 'y');
      fs.writeFileSync(Buffer.from('bad\\xff\\n-name', 'latin1'), 'z');
      fs.symlinkSync(path.join(args[1], 'secret'), 'link-to-secret');
      fs.symlinkSync(args[1], 'dirlink');
      require('node:child_process').execFileSync('/usr/bin/mkfifo', ['fifo']);
      fs.mkdirSync('kept');
      `,
      [work, precious],
    );
    // A root-owned file inside a student directory: survives, and keeps its directory.
    fs.writeFileSync(path.join(work, 'kept', 'root-file'), 'root');

    const result = await reclaim(uid, { roots: [work] });

    expect(result.failed).toEqual([]);
    expect(result.complete).toBe(true);
    expect(result.misbehavior).toBeUndefined();
    expect(result.keptNonEmpty).toBe(1);
    expect(fs.readdirSync(work).sort()).toEqual(['kept']);
    expect(fs.readdirSync(path.join(work, 'kept'))).toEqual(['root-file']);
    // Links were removed as links: their targets (one of them the uid's own file) survive.
    expect(fs.readFileSync(path.join(precious, 'secret'), 'utf8')).toBe('root secret');
    expect(fs.readFileSync(path.join(precious, 'theirs'), 'utf8')).toBe('student file outside the roots');
    // The root itself survives.
    expect(fs.statSync(work).isDirectory()).toBe(true);
    // 3 dirs (a, a/b, a/b/c) + f.txt + top.txt + bad name + 2 links + fifo
    expect(result.removed).toBe(9);
  });

  it('sweeps a directory of 70,000 entries in bounded batches', async () => {
    const { work, uid } = setup();
    const wide = path.join(work, 'wide');
    asStudent(uid, `fs.mkdirSync(args[0])`, [wide]);
    run('/usr/bin/mount', ['-t', 'tmpfs', '-o', 'size=64m,nr_inodes=100000', 'karotte-reclaim-wide', wide]);
    cleanups.push(() => {
      run('/usr/bin/umount', ['-l', wide]);
    });
    fs.chownSync(wide, uid, uid);
    asStudent(uid, `for (let i = 0; i < 70000; i++) fs.closeSync(fs.openSync(args[0] + '/f' + i, 'w'));`, [
      wide,
    ]);
    const result = await reclaim(uid, { roots: [wide] });
    expect(result.failed).toEqual([]);
    expect(result.removed).toBe(70_000);
    expect(fs.readdirSync(wide)).toEqual([]);
  });

  it('sweeps a tree 10,000 deep', async () => {
    const { work, uid } = setup();
    asStudent(
      uid,
      `process.chdir(args[0]); for (let i = 0; i < 10000; i++) { fs.mkdirSync('d'); process.chdir('d'); }`,
      [work],
    );
    const result = await reclaim(uid, { roots: [work] });
    expect(result.failed).toEqual([]);
    expect(result.removed).toBe(10_000);
    expect(fs.readdirSync(work)).toEqual([]);
  });

  it('keeps excluded subtrees and the directories leading to them', async () => {
    const { work, uid } = setup();
    asStudent(
      uid,
      `process.chdir(args[0]);
       fs.mkdirSync('keep/deeper/zone', { recursive: true });
       fs.writeFileSync('keep/deeper/zone/data', 'kept');
       fs.writeFileSync('keep/deeper/gone', 'x');
       fs.mkdirSync('other'); fs.writeFileSync('other/gone', 'x');`,
      [work],
    );
    const result = await reclaim(uid, { roots: [work], exclude: [path.join(work, 'keep/deeper/zone')] });
    expect(result.complete).toBe(true);
    expect(fs.readFileSync(path.join(work, 'keep/deeper/zone/data'), 'utf8')).toBe('kept');
    expect(fs.existsSync(path.join(work, 'keep/deeper/gone'))).toBe(false);
    expect(fs.existsSync(path.join(work, 'other'))).toBe(false);
  });

  it('handles trees deeper than PATH_MAX and the descriptor window', async () => {
    const { work, uid } = setup();
    // 300 levels of 100-byte names: a 30 KB path, far past PATH_MAX and the 64-fd window.
    asStudent(
      uid,
      `process.chdir(args[0]);
       const name = 'd'.repeat(100);
       for (let i = 0; i < 300; i++) { fs.mkdirSync(name); process.chdir(name); fs.writeFileSync('f', String(i)); }`,
      [work],
    );
    const result = await reclaim(uid, { roots: [work] });
    expect(result.failed).toEqual([]);
    expect(result.complete).toBe(true);
    expect(result.removed).toBe(600);
    expect(fs.readdirSync(work)).toEqual([]);
  });

  it('never crosses a mount point unless told to, and never removes one', async () => {
    const { work, uid } = setup();
    const mnt = path.join(work, 'mnt');
    asStudent(uid, `fs.mkdirSync(args[0])`, [mnt]);
    run('/usr/bin/mount', ['-t', 'tmpfs', '-o', 'size=1m', 'karotte-reclaim-tmpfs', mnt]);
    cleanups.push(() => {
      run('/usr/bin/umount', ['-l', mnt]);
    });
    fs.chownSync(mnt, uid, uid);
    asStudent(uid, `fs.writeFileSync(path.join(args[0], 'in-tmpfs'), 'x')`, [mnt]);

    const kept = await reclaim(uid, { roots: [work] });
    expect(kept.complete).toBe(true);
    expect(kept.skippedMounts).toEqual([mnt]);
    expect(fs.existsSync(path.join(mnt, 'in-tmpfs'))).toBe(true);

    const crossed = await reclaim(uid, { roots: [work], crossMounts: true });
    expect(crossed.complete).toBe(true);
    expect(fs.existsSync(path.join(mnt, 'in-tmpfs'))).toBe(false);
    // The mount point itself is never removed.
    expect(fs.statSync(mnt).isDirectory()).toBe(true);
  });

  it('is not fooled by mounts that come and go under its roots while it sweeps (other episodes mount their worlds)', async () => {
    // Seen in CI: an honest episode's sweep of the host's RAM-backed mounts ended UNRECLAIMABLE
    // ("changed during sweep") because a neighbour's sandbox mounted or unmounted a directory
    // between the sweep's lstat and its open. A root-owned directory that becomes a mount point
    // is nobody's trick; the sweep must see the mount and go on.
    const { base, uid } = setup();
    const points = Array.from({ length: 8 }, (_, i) => path.join(base, `mount-${i}`));
    for (const point of points) fs.mkdirSync(point);
    const churn = spawn(
      '/bin/sh',
      [
        '-c',
        'end=$(($(date +%s) + 4)); while [ "$(date +%s)" -lt "$end" ]; do for p in "$@"; do ' +
          '/usr/bin/mount -t tmpfs -o size=1m karotte-reclaim-churn "$p" && /usr/bin/umount -l "$p"; done; done',
        'churn',
        ...points,
      ],
      { stdio: 'ignore' },
    );
    const exited = new Promise<void>((resolve) => {
      churn.once('exit', () => {
        resolve();
      });
    });
    cleanups.push(async () => {
      churn.kill('SIGKILL');
      await exited;
      // Until none is left: a mount can sit on another when an unmount was refused.
      for (const point of points)
        for (let i = 0; i < 100 && spawnSync('/usr/bin/umount', ['-l', point]).status === 0; i += 1);
    });
    let running = true;
    void exited.then(() => {
      running = false;
    });
    const results = [];
    while (running) {
      results.push(await reclaim(uid, { roots: [base] }));
      // A sweep this small may finish without reaching the event loop: let the exit through.
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(results.length).toBeGreaterThan(20);
    expect(results.filter((result) => !result.complete).map((result) => result.failed)).toEqual([]);
  }, 30_000);

  it('detects a bind mount of the same filesystem by its mount id', async () => {
    const { work, precious, uid } = setup();
    const bind = path.join(work, 'bind');
    asStudent(uid, `fs.mkdirSync(args[0])`, [bind]);
    run('/usr/bin/mount', ['--bind', precious, bind]);
    cleanups.push(() => {
      run('/usr/bin/umount', ['-l', bind]);
    });
    // Same st_dev as its parent: only the mount id tells it is a mount point.
    expect(fs.statSync(bind).dev).toBe(fs.statSync(work).dev);
    const result = await reclaim(uid, { roots: [work] });
    expect(result.skippedMounts).toEqual([bind]);
    expect(fs.readFileSync(path.join(precious, 'theirs'), 'utf8')).toBe('student file outside the roots');
  });

  it('never enters virtual filesystems even when crossing mounts', async () => {
    const { work, uid } = setup();
    const procDir = path.join(work, 'proc');
    fs.mkdirSync(procDir);
    run('/usr/bin/mount', ['--bind', '/proc', procDir]);
    cleanups.push(() => {
      run('/usr/bin/umount', ['-l', procDir]);
    });
    const result = await reclaim(uid, { roots: [work], crossMounts: true });
    expect(result.skippedMounts).toEqual([procDir]);
    expect(result.complete).toBe(true);
  });

  it('reports what it cannot remove as UNRECLAIMABLE, and sweeps the rest', async () => {
    const { work, uid } = setup();
    asStudent(
      uid,
      `fs.writeFileSync(path.join(args[0], 'stuck'), 'x'); fs.writeFileSync(path.join(args[0], 'gone'), 'y');`,
      [work],
    );
    const stuck = path.join(work, 'stuck');
    run('/usr/bin/chattr', ['+i', stuck]);
    cleanups.push(() => {
      run('/usr/bin/chattr', ['-i', stuck]);
    });
    const result = await reclaim(uid, { roots: [work] });
    expect(result.complete).toBe(false);
    expect(result.failed).toEqual([{ path: stuck, reason: 'EPERM' }]);
    expect(result.misbehavior?.code).toBe('UNRECLAIMABLE');
    expect(fs.existsSync(path.join(work, 'gone'))).toBe(false);
  });

  it('gives up at the deadline and says so', async () => {
    const { work, uid } = setup();
    asStudent(
      uid,
      `process.chdir(args[0]); for (let d = 0; d < 20; d++) { fs.mkdirSync('d' + d); for (let i = 0; i < 500; i++) fs.writeFileSync('d' + d + '/f' + i, ''); }`,
      [work],
    );
    const result = await reclaim(uid, { roots: [work], timeoutMs: 1 });
    expect(result.timedOut).toBe(true);
    expect(result.complete).toBe(false);
    expect(result.misbehavior?.code).toBe('UNRECLAIMABLE');
    expect(result.misbehavior?.message).toContain('longer than 1 ms');
  });

  it('skips missing roots and refuses a root reached through a link', async () => {
    const { base, work, uid } = setup();
    const linked = path.join(base, 'linked');
    fs.symlinkSync(work, linked);
    const result = await reclaim(uid, { roots: [path.join(base, 'nope'), linked] });
    expect(result.missingRoots).toEqual([path.join(base, 'nope')]);
    expect(result.failed).toEqual([{ path: linked, reason: 'symlink' }]);
  });

  it('refuses uid 0 and system uids', async () => {
    await expect(reclaim(0, { roots: ['/tmp'] })).rejects.toBeInstanceOf(BadArgumentError);
    await expect(reclaim(33, { roots: ['/tmp'] })).rejects.toBeInstanceOf(BadArgumentError);
  });

  it('honours the abort signal', async () => {
    const { work, uid } = setup();
    const controller = new AbortController();
    controller.abort();
    await expect(reclaim(uid, { roots: [work], abortSignal: controller.signal })).rejects.toMatchObject({
      code: 'ABORTED',
    });
  });
});
