// Unit tests of the /proc layer against fake procfs trees (plain directories): the walk's
// rules (real uid, zombies, vanished entries, incomplete walks) must hold whatever the host.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isDeadState, isLive, parseStat, parseStatus, scanOwned, walkUid } from './procfs.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

function fakeProc(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-fakeproc-'));
  roots.push(root);
  return root;
}

function status(name: string, state: string, uids: [number, number, number, number], extra = ''): string {
  return [
    `Name:\t${name}`,
    `State:\t${state} (whatever)`,
    `Tgid:\t1`,
    `Uid:\t${uids.join('\t')}`,
    `Gid:\t0\t0\t0\t0`,
    `Threads:\t1`,
    extra,
  ].join('\n');
}

function addProcess(root: string, pid: number, text: string): void {
  fs.mkdirSync(path.join(root, String(pid), 'task', String(pid)), { recursive: true });
  fs.writeFileSync(path.join(root, String(pid), 'status'), text);
}

describe('parseStatus', () => {
  it('reads name, state, REAL uid, threads and NSpid', () => {
    const parsed = parseStatus(status('sleep', 'S', [1001, 0, 0, 0], 'NSpid:\t4321\t7\t1'));
    expect(parsed).toEqual({ name: 'sleep', state: 'S', realUid: 1001, threads: 1, nsPids: [4321, 7, 1] });
  });

  it('returns undefined when the uid line is missing or garbled', () => {
    expect(parseStatus('Name:\tx\nState:\tS (sleeping)\n')).toBeUndefined();
    expect(parseStatus('Name:\tx\nState:\tS (sleeping)\nUid:\tabc\t1\t1\t1\n')).toBeUndefined();
  });
});

describe('parseStat', () => {
  it('reads the fields after the LAST parenthesis, whatever the student named its process', () => {
    const text = '4242 (evil) S 1 2 3 (x) Z 99 77 66 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0\n';
    const parsed = parseStat(text);
    expect(parsed).toEqual({ state: 'Z', ppid: 99, pgid: 77, sid: 66, startTime: 123456 });
  });

  it('returns undefined for a truncated line', () => {
    expect(parseStat('12 (sh) S 1 2')).toBeUndefined();
    expect(parseStat('no parenthesis at all')).toBeUndefined();
  });

  it('treats only Z and X as dead', () => {
    expect(['Z', 'X', 'x'].every(isDeadState)).toBe(true);
    expect(['R', 'S', 'D', 'T', 't', 'I'].some(isDeadState)).toBe(false);
  });
});

describe('walkUid', () => {
  it('lists live processes by real uid only', () => {
    const root = fakeProc();
    addProcess(root, 10, status('mine', 'S', [1001, 1001, 1001, 1001]));
    addProcess(root, 11, status('setuid-root', 'R', [1001, 0, 0, 0]));
    addProcess(root, 12, status('root-as-student', 'S', [0, 1001, 1001, 1001]));
    addProcess(root, 13, status('other', 'S', [1002, 1002, 1002, 1002]));
    fs.mkdirSync(path.join(root, 'self'));
    const walk = walkUid(1001, root);
    expect(walk.complete).toBe(true);
    expect(walk.alive.map((p) => p.pid).sort()).toEqual([10, 11]);
  });

  it('skips zombies but keeps a zombie leader whose other threads still run', () => {
    const root = fakeProc();
    addProcess(root, 20, status('zombie', 'Z', [1001, 1001, 1001, 1001]));
    addProcess(root, 21, status('leader-gone', 'Z', [1001, 1001, 1001, 1001]));
    fs.mkdirSync(path.join(root, '21', 'task', '22'), { recursive: true });
    fs.writeFileSync(
      path.join(root, '21', 'task', '22', 'stat'),
      '22 (worker) R 1 21 21 0 -1 0 0 0 0 0 0 0 0 0 0 20 0 2 0 555 0 0',
    );
    const walk = walkUid(1001, root);
    expect(walk.complete).toBe(true);
    expect(walk.alive.map((p) => p.pid)).toEqual([21]);
  });

  it('counts an entry that vanished (the process exited) as not alive, and stays complete', () => {
    const root = fakeProc();
    fs.mkdirSync(path.join(root, '30')); // listed, but its status is gone (ENOENT)
    addProcess(root, 31, status('live', 'S', [1001, 1001, 1001, 1001]));
    const walk = walkUid(1001, root);
    expect(walk).toMatchObject({ complete: true, vanished: 1 });
    expect(walk.alive.map((p) => p.pid)).toEqual([31]);
  });

  it('is incomplete, never clean, when an entry cannot be read for another reason', () => {
    const root = fakeProc();
    fs.mkdirSync(path.join(root, '40', 'status'), { recursive: true }); // EISDIR, not "exited"
    const walk = walkUid(1001, root);
    expect(walk.complete).toBe(false);
    expect(walk.alive).toEqual([]);
    expect(walk.problem).toMatch(/EISDIR/);
  });

  it('is incomplete when a status is garbled or /proc cannot be listed', () => {
    const root = fakeProc();
    fs.mkdirSync(path.join(root, '50'));
    fs.writeFileSync(path.join(root, '50', 'status'), 'Name:\tx\n');
    expect(walkUid(1001, root).complete).toBe(false);
    expect(walkUid(1001, path.join(root, 'missing')).complete).toBe(false);
  });
});

describe('scanOwned', () => {
  it('lists the entries the uid owns and which of them are in another PID namespace', () => {
    const root = fakeProc();
    const me = process.getuid!();
    for (const [pid, namespace] of [
      [60, 'pid:[1]'],
      [61, 'pid:[2]'],
    ] as const) {
      fs.mkdirSync(path.join(root, String(pid), 'ns'), { recursive: true });
      fs.symlinkSync(namespace, path.join(root, String(pid), 'ns', 'pid'));
    }
    fs.mkdirSync(path.join(root, '62')); // no ns link (exited): owned, not foreign
    const scan = scanOwned(me, 'pid:[1]', root);
    expect([...scan.owned].sort()).toEqual([60, 61, 62]);
    expect(scan.foreign).toEqual([61]);
    // Entries owned by someone else are not listed.
    expect(scanOwned(me + 1, 'pid:[1]', root)).toEqual({ owned: [], foreign: [] });
  });
});

describe('isLive', () => {
  it('is false for an exited process or a plain zombie, true for a runner or a garbled status', () => {
    const root = fakeProc();
    addProcess(root, 70, status('runner', 'R', [1, 1, 1, 1]));
    addProcess(root, 71, status('zombie', 'Z', [1, 1, 1, 1]));
    fs.mkdirSync(path.join(root, '72'));
    fs.writeFileSync(path.join(root, '72', 'status'), 'garbage');
    expect(isLive(70, root)).toBe(true);
    expect(isLive(71, root)).toBe(false);
    expect(isLive(72, root)).toBe(true);
    expect(isLive(73, root)).toBe(false);
  });
});
