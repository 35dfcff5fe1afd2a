// readUntrusted / writeUntrusted / listUntrusted / statUntrusted against a real student:
// the same cases in this process (as root) and through the as-uid helper (as the student).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BadArgumentError } from '@karotte/base';
import { killUid, pidsOfUid, tempDir, testUid, waitFor } from '../../../test/support/index.js';
import { asStudent, run, startStudent } from '../test/student.js';
import { listUntrusted, readUntrusted, statUntrusted, writeUntrusted } from './untrusted.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface World {
  uid: number;
  base: string;
  work: string;
  answerKey: string;
}

function world(): World {
  const uid = testUid();
  const { dir: base, cleanup } = tempDir('untrusted');
  cleanups.push(cleanup);
  cleanups.push(() => killUid(uid));
  fs.chmodSync(base, 0o755);
  const work = path.join(base, 'work');
  fs.mkdirSync(work);
  fs.chmodSync(work, 0o755);
  fs.chownSync(work, uid, uid);
  const secret = path.join(base, 'secret');
  fs.mkdirSync(secret, { mode: 0o711 });
  const answerKey = path.join(secret, 'answer-key');
  fs.writeFileSync(answerKey, 'the answer is 42\n', { mode: 0o600 });
  asStudent(
    uid,
    `
    const { execFileSync } = require('node:child_process');
    fs.writeFileSync('notes.txt', 'hello\\n');
    fs.writeFileSync('big.txt', 'x'.repeat(5000));
    fs.writeFileSync('latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    fs.symlinkSync(args[0], 'answer.txt');
    fs.symlinkSync('/dev/zero', 'zero');
    fs.symlinkSync(path.dirname(args[0]), 'secret-dir');
    execFileSync('/usr/bin/mkfifo', ['fifo']);
    fs.mkdirSync('dir'); fs.writeFileSync('dir/a', 'a'); fs.writeFileSync('dir/line\\nbreak', 'b'); fs.symlinkSync('a', 'dir/link');
    fs.mkdirSync('locked'); fs.writeFileSync('locked/inside.txt', 'x'); fs.chmodSync('locked', 0);
    fs.closeSync(fs.openSync('huge.bin', 'w')); fs.truncateSync('huge.bin', 100 * 1024 ** 3);
    `,
    [answerKey],
    work,
  );
  return { uid, base, work, answerKey };
}

const modes = [
  { label: 'in process (root)', options: (): { asUid?: number } => ({}) },
  { label: 'as the student uid', options: (w: World): { asUid?: number } => ({ asUid: w.uid }) },
];

describe.each(modes)('readUntrusted $label', ({ options }) => {
  it('reads a regular file, bounded', async () => {
    const w = world();
    const result = await readUntrusted(path.join(w.work, 'notes.txt'), { ...options(w), encoding: 'utf8' });
    expect(result).toMatchObject({ ok: true, data: 'hello\n', size: 6, bytesRead: 6, truncated: false });
  });

  it('refuses links at the final component and on the way, FIFOs, devices and directories', async () => {
    const w = world();
    const cases: [string, string][] = [
      ['answer.txt', 'SYMLINK'],
      ['zero', 'SYMLINK'],
      ['secret-dir/answer-key', 'SYMLINK'],
      ['fifo', 'NOT_REGULAR_FILE'],
      ['dir', 'IS_DIRECTORY'],
      ['missing.txt', 'NOT_FOUND'],
      ['notes.txt/below', 'NOT_DIRECTORY'],
    ];
    const started = performance.now();
    for (const [name, reason] of cases) {
      const result = await readUntrusted(path.join(w.work, name), options(w));
      expect(result, name).toMatchObject({ ok: false, reason });
    }
    expect(await readUntrusted('/dev/zero', options(w))).toMatchObject({
      ok: false,
      reason: 'NOT_REGULAR_FILE',
    });
    // Nothing blocked (the FIFO has no writer): every case answered promptly.
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it('refuses a file over maxBytes before reading it, or truncates when asked', async () => {
    const w = world();
    expect(
      await readUntrusted(path.join(w.work, 'big.txt'), { ...options(w), maxBytes: 1000 }),
    ).toMatchObject({
      ok: false,
      reason: 'TOO_LARGE',
      size: 5000,
    });
    const started = performance.now();
    expect(await readUntrusted(path.join(w.work, 'huge.bin'), options(w))).toMatchObject({
      ok: false,
      reason: 'TOO_LARGE',
      size: 100 * 1024 ** 3,
    });
    expect(performance.now() - started).toBeLessThan(5000);
    const cut = await readUntrusted(path.join(w.work, 'big.txt'), {
      ...options(w),
      maxBytes: 1000,
      truncate: true,
    });
    expect(cut).toMatchObject({ ok: true, size: 5000, bytesRead: 1000, truncated: true });
  });

  it('refuses invalid UTF-8 as text', async () => {
    const w = world();
    expect(
      await readUntrusted(path.join(w.work, 'latin1.txt'), { ...options(w), encoding: 'utf8' }),
    ).toMatchObject({
      ok: false,
      reason: 'NOT_UTF8',
    });
    const raw = await readUntrusted(path.join(w.work, 'latin1.txt'), options(w));
    expect(raw.ok && raw.data).toEqual(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
  });

  it('lists a directory without following links, with escaped names', async () => {
    const w = world();
    const result = await listUntrusted(path.join(w.work, 'dir'), options(w));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.entries.map((entry) => [entry.name, entry.type])).toEqual([
      ['a', 'file'],
      ['line\\nbreak', 'file'],
      ['link', 'symlink'],
    ]);
    expect(result.entries[1]!.rawName).toEqual(Buffer.from('line\nbreak'));
    expect(result.entries[0]).toMatchObject({ size: 1, uid: w.uid });
    const few = await listUntrusted(path.join(w.work, 'dir'), { ...options(w), maxEntries: 2 });
    expect(few).toMatchObject({ ok: true, truncated: true });
    expect(await listUntrusted(path.join(w.work, 'secret-dir'), options(w))).toMatchObject({
      ok: false,
      reason: 'SYMLINK',
    });
  });

  it('describes a link without following it', async () => {
    const w = world();
    expect(await statUntrusted(path.join(w.work, 'answer.txt'), options(w))).toMatchObject({
      ok: true,
      type: 'symlink',
      uid: w.uid,
    });
    expect(await statUntrusted(path.join(w.work, 'notes.txt'), options(w))).toMatchObject({
      ok: true,
      type: 'file',
      size: 6,
    });
  });
});

describe('as the student uid: the uid bounds what is reachable', () => {
  it('cannot read a root-only file, even by following a link to it', async () => {
    const w = world();
    expect(await readUntrusted(w.answerKey, { asUid: w.uid })).toMatchObject({
      ok: false,
      reason: 'PERMISSION_DENIED',
    });
    expect(
      await readUntrusted(path.join(w.work, 'answer.txt'), { asUid: w.uid, followSymlinks: true }),
    ).toMatchObject({
      ok: false,
      reason: 'PERMISSION_DENIED',
    });
    // followSymlinks as the harness itself is refused outright.
    await expect(
      readUntrusted(path.join(w.work, 'answer.txt'), { followSymlinks: true }),
    ).rejects.toBeInstanceOf(BadArgumentError);
  });

  it('cannot read or list a directory the student made unreadable; root can', async () => {
    const w = world();
    const locked = path.join(w.work, 'locked');
    expect(await readUntrusted(path.join(locked, 'inside.txt'), { asUid: w.uid })).toMatchObject({
      ok: false,
      reason: 'PERMISSION_DENIED',
    });
    expect(await listUntrusted(locked, { asUid: w.uid })).toMatchObject({
      ok: false,
      reason: 'PERMISSION_DENIED',
    });
    expect(await readUntrusted(path.join(locked, 'inside.txt'))).toMatchObject({ ok: true });
  });

  it('writes as the student: exclusive create, overwrite, append; refuses links, FIFOs, root-only places', async () => {
    const w = world();
    const file = path.join(w.work, 'out.txt');
    expect(await writeUntrusted(file, 'one', { asUid: w.uid })).toMatchObject({
      ok: true,
      bytesWritten: 3,
      created: true,
    });
    const stats = fs.statSync(file);
    expect([stats.uid, stats.gid, stats.mode & 0o777]).toEqual([w.uid, w.uid, 0o644]);
    expect(await writeUntrusted(file, 'two!', { asUid: w.uid })).toMatchObject({ ok: true, created: false });
    expect(fs.readFileSync(file, 'utf8')).toBe('two!');
    expect(await writeUntrusted(file, '+', { asUid: w.uid, mode: 'append' })).toMatchObject({ ok: true });
    expect(fs.readFileSync(file, 'utf8')).toBe('two!+');
    expect(await writeUntrusted(file, 'x', { asUid: w.uid, mode: 'create' })).toMatchObject({
      ok: false,
      reason: 'EXISTS',
    });

    const before = fs.readFileSync(w.answerKey, 'utf8');
    expect(await writeUntrusted(path.join(w.work, 'answer.txt'), 'pwned', { asUid: w.uid })).toMatchObject({
      ok: false,
      reason: 'SYMLINK',
    });
    expect(
      await writeUntrusted(path.join(w.work, 'secret-dir/new'), 'pwned', { asUid: w.uid }),
    ).toMatchObject({
      ok: false,
      reason: 'SYMLINK',
    });
    expect(fs.readFileSync(w.answerKey, 'utf8')).toBe(before);
    const started = performance.now();
    expect(await writeUntrusted(path.join(w.work, 'fifo'), 'x', { asUid: w.uid })).toMatchObject({
      ok: false,
      reason: 'NOT_REGULAR_FILE',
    });
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(await writeUntrusted(path.join(w.base, 'root-owned.txt'), 'x', { asUid: w.uid })).toMatchObject({
      ok: false,
      reason: 'PERMISSION_DENIED',
    });
    expect(fs.existsSync(path.join(w.base, 'root-owned.txt'))).toBe(false);
    await expect(
      writeUntrusted(file, 'x'.repeat(100), { asUid: w.uid, maxBytes: 10 }),
    ).rejects.toBeInstanceOf(BadArgumentError);
    // Names with newlines and invalid UTF-8 are written exactly.
    const odd = Buffer.concat([Buffer.from(`${w.work}/odd\n`), Buffer.from([0xff])]);
    expect(await writeUntrusted(odd, 'odd', { asUid: w.uid })).toMatchObject({ ok: true, created: true });
    expect(fs.readFileSync(odd, 'utf8')).toBe('odd');
  });

  it('a helper the student stops is killed at the deadline (TIMED_OUT); one it kills is INTERRUPTED', async () => {
    const w = world();
    // The student watches for the harness's helper (same uid) and stops or kills it.
    const watcher = (signal: string) =>
      startStudent(
        w.uid,
        `let announced = false;
         for (;;) {
           for (const pid of fs.readdirSync('/proc').filter((name) => /^\\d+$/.test(name))) {
             try {
               const cmdline = fs.readFileSync('/proc/' + pid + '/cmdline', 'latin1');
               if (cmdline.includes('karotte-request:') && Number(pid) !== process.pid) process.kill(Number(pid), args[0]);
             } catch {}
           }
           if (!announced) { announced = true; process.stdout.write('watching\\n'); }
         }`,
        [signal],
      );
    // The watcher races the helper's start; give it priority and a few chances, and require
    // that the attack landed at least once. Every attempt must end as ok (the watcher missed)
    // or as the expected failure, never hang.
    const attack = async (signal: string, timeoutMs: number): Promise<string[]> => {
      const child = watcher(signal);
      cleanups.push(() => {
        child.kill('SIGKILL');
      });
      run('/usr/bin/renice', ['-n', '-15', '-p', String(child.pid)]);
      // Attack only once the watcher has finished a first scan of /proc (a node that starts
      // on a loaded machine can take longer than any fixed delay).
      await new Promise<void>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('watching\n')) resolve();
        });
        child.on('exit', (code, exitSignal) => {
          reject(new Error(`the watcher exited (${String(code)} ${String(exitSignal)})`));
        });
      });
      const outcomes: string[] = [];
      for (let attempt = 0; attempt < 5; attempt += 1) {
        const result = await readUntrusted(path.join(w.work, 'notes.txt'), { asUid: w.uid, timeoutMs });
        expect(result.durationMs).toBeLessThan(timeoutMs + 5000);
        outcomes.push(result.ok ? 'ok' : result.reason);
        if (!result.ok) break;
      }
      child.kill('SIGKILL');
      await waitFor(() => pidsOfUid(w.uid).length === 0, 10_000);
      return outcomes;
    };
    const stopped = await attack('SIGSTOP', 1500);
    expect(stopped.at(-1)).toBe('TIMED_OUT');
    expect(stopped.slice(0, -1).every((outcome) => outcome === 'ok')).toBe(true);
    const killed = await attack('SIGKILL', 5000);
    expect(['INTERRUPTED', 'TIMED_OUT']).toContain(killed.at(-1));
    expect(killed.slice(0, -1).every((outcome) => outcome === 'ok')).toBe(true);
  });

  it('enters a mount namespace to see the student’s view of the filesystem', async () => {
    const w = world();
    const view = path.join(w.base, 'view');
    fs.mkdirSync(view, { mode: 0o755 });
    const holder = spawn(
      '/usr/bin/unshare',
      [
        '--mount',
        '--propagation',
        'private',
        '--',
        '/bin/sh',
        '-c',
        'mount -t tmpfs karotte-untrusted-ns "$1" && echo inside > "$1/inside.txt" && chmod 755 "$1" && chmod 644 "$1/inside.txt" && echo ready && exec sleep 120',
        'sh',
        view,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    cleanups.push(() => {
      holder.kill('SIGKILL');
    });
    await new Promise<void>((resolve, reject) => {
      holder.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('ready')) resolve();
      });
      holder.on('exit', () => {
        reject(new Error('namespace holder exited'));
      });
    });
    const target = path.join(view, 'inside.txt');
    expect(await readUntrusted(target, { asUid: w.uid })).toMatchObject({ ok: false, reason: 'NOT_FOUND' });
    const inside = await readUntrusted(target, {
      asUid: w.uid,
      mountNamespace: `/proc/${holder.pid!}/ns/mnt`,
      encoding: 'utf8',
    });
    expect(inside).toMatchObject({ ok: true, data: 'inside\n' });
    // The host view is untouched.
    expect(fs.readdirSync(view)).toEqual([]);
    run('/usr/bin/true', []);
  });
});
