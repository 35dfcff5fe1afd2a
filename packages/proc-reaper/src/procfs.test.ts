// Unit tests of the reaper's own /proc readers against fake procfs trees (plain directories).
// The uid walk's rules are tested with it in @karotte/base (host/proc.test.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scanOwned, walkAll } from './procfs.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

function fakeProc(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-fakeproc-'));
  roots.push(root);
  return root;
}

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
    expect(scanOwned(me, 'pid:[1]', root, new Set([61, 62]))).toEqual({ owned: [60], foreign: [] });
    // Entries owned by someone else are not listed.
    expect(scanOwned(me + 1, 'pid:[1]', root)).toEqual({ owned: [], foreign: [] });
  });
});

describe('walkAll', () => {
  it('lists live processes with their stat, skips the dead and the exited, and flags garbage', () => {
    const root = fakeProc();
    const stat = (pid: number, state: string): string =>
      `${pid} (p ${pid}) ${state} 1 ${pid} ${pid} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 ${pid * 10} 0 0`;
    for (const [pid, state] of [
      [80, 'S'],
      [81, 'Z'],
    ] as const) {
      fs.mkdirSync(path.join(root, String(pid)));
      fs.writeFileSync(path.join(root, String(pid), 'stat'), stat(pid, state));
    }
    fs.mkdirSync(path.join(root, '82')); // exited: its stat is gone
    const clean = walkAll(root);
    expect(clean.complete).toBe(true);
    expect([...clean.processes.keys()]).toEqual([80]);
    expect(clean.processes.get(80)).toMatchObject({ name: 'p 80', ppid: 1, pgid: 80, startTicks: 800 });
    fs.mkdirSync(path.join(root, '83'));
    fs.writeFileSync(path.join(root, '83', 'stat'), 'garbage');
    expect(walkAll(root).complete).toBe(false);
  });
});
