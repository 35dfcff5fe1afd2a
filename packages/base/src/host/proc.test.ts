// The /proc layer against fake procfs trees (plain directories) where the rules must hold
// whatever the host (uids, zombies, vanished entries, incomplete walks), and against this
// process and a real child where only the kernel can answer (identity, kill).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  bootId,
  identityOf,
  isDeadState,
  isProcessRunnable,
  isProcessLive,
  isSameProcessAlive,
  killPid,
  parseProcessStat,
  parseProcessStatus,
  processesOfUid,
  readProcessStat,
  readProcessStatus,
} from './proc.js';

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

describe('parseProcessStatus', () => {
  it('reads name, state, all four uids, threads, NSpid and pending signals', () => {
    const parsed = parseProcessStatus(
      status(
        'sleep',
        'S',
        [1001, 1002, 1003, 1004],
        'NSpid:\t4321\t7\t1\nSigPnd:\t0000000000000100\nShdPnd:\t0000000000000001',
      ),
    );
    expect(parsed).toEqual({
      name: 'sleep',
      state: 'S',
      uids: [1001, 1002, 1003, 1004],
      threads: 1,
      nsPids: [4321, 7, 1],
      pendingSignals: 0x101n,
      sharedPendingSignals: 0x1n,
    });
  });

  it('returns undefined when the uid line is missing, short or garbled', () => {
    expect(parseProcessStatus('Name:\tx\nState:\tS (sleeping)\n')).toBeUndefined();
    expect(parseProcessStatus('Name:\tx\nState:\tS (sleeping)\nUid:\tabc\t1\t1\t1\n')).toBeUndefined();
    expect(parseProcessStatus('Name:\tx\nState:\tS (sleeping)\nUid:\t1\t1\n')).toBeUndefined();
  });
});

describe('parseProcessStat', () => {
  it('reads the fields after the LAST parenthesis, whatever the process named itself', () => {
    const text = '4242 (evil) S 1 2 3 (x) Z 99 77 66 0 -1 4194564 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0\n';
    expect(parseProcessStat(4242, text)).toEqual({
      pid: 4242,
      name: 'evil) S 1 2 3 (x',
      state: 'Z',
      ppid: 99,
      pgid: 77,
      sid: 66,
      flags: 4194564,
      startTicks: 123456,
    });
  });

  it('returns undefined for a truncated line', () => {
    expect(parseProcessStat(12, '12 (sh) S 1 2')).toBeUndefined();
    expect(parseProcessStat(1, 'no parenthesis at all')).toBeUndefined();
  });

  it('treats only Z, X and x as dead', () => {
    expect(['Z', 'X', 'x'].every(isDeadState)).toBe(true);
    expect(['R', 'S', 'D', 'T', 't', 'I'].some(isDeadState)).toBe(false);
  });
});

describe('readProcessStat and readProcessStatus', () => {
  it('read this process, and answer undefined for an exited one', () => {
    expect(readProcessStat(process.pid)?.ppid).toBe(process.ppid);
    expect(readProcessStatus(process.pid)?.uids[0]).toBe(process.getuid!());
    const root = fakeProc();
    expect(readProcessStat(5, root)).toBeUndefined();
    expect(readProcessStatus(5, root)).toBeUndefined();
  });

  it('throw a SystemError for a failure other than the exit', () => {
    const root = fakeProc();
    fs.mkdirSync(path.join(root, '5', 'stat'), { recursive: true });
    expect(() => readProcessStat(5, root)).toThrow(/EISDIR/);
  });
});

describe('processesOfUid', () => {
  it('lists live processes holding the uid as real, effective, saved or filesystem uid', () => {
    const root = fakeProc();
    addProcess(root, 10, status('mine', 'S', [1001, 1001, 1001, 1001]));
    addProcess(root, 11, status('setuid-root', 'R', [1001, 0, 0, 0]));
    addProcess(root, 12, status('root-as-student', 'S', [0, 1001, 0, 0]));
    addProcess(root, 14, status('saved', 'S', [0, 0, 1001, 0]));
    addProcess(root, 15, status('fs', 'S', [0, 0, 0, 1001]));
    addProcess(root, 13, status('other', 'S', [1002, 1002, 1002, 1002]));
    fs.mkdirSync(path.join(root, 'self'));
    const walk = processesOfUid(1001, root);
    expect(walk.complete).toBe(true);
    expect(walk.alive.map((p) => p.pid).sort()).toEqual([10, 11, 12, 14, 15]);
    // Pids the caller already knows are not read: an unreadable one then does not spoil the walk.
    fs.rmSync(path.join(root, '11', 'status'));
    fs.mkdirSync(path.join(root, '11', 'status'));
    expect(processesOfUid(1001, root).complete).toBe(false);
    const skipping = processesOfUid(1001, root, new Set([11, 12]));
    expect(skipping.complete).toBe(true);
    expect(skipping.alive.map((p) => p.pid).sort()).toEqual([10, 14, 15]);
  });

  it('skips zombies but keeps a zombie leader whose other threads still run', () => {
    const root = fakeProc();
    addProcess(root, 20, status('zombie', 'Z', [1001, 1001, 1001, 1001]));
    addProcess(root, 21, status('leader-gone', 'Z', [1001, 1001, 1001, 1001], 'NSpid:\t21\t1'));
    fs.mkdirSync(path.join(root, '21', 'task', '22'), { recursive: true });
    fs.writeFileSync(
      path.join(root, '21', 'task', '22', 'stat'),
      '22 (worker) R 1 21 21 0 -1 0 0 0 0 0 0 0 0 0 0 20 0 2 0 555 0 0',
    );
    const walk = processesOfUid(1001, root);
    expect(walk.complete).toBe(true);
    expect(walk.alive).toEqual([{ pid: 21, name: 'leader-gone', state: 'Z', nested: true, dying: false }]);
  });

  it('marks a process with SIGKILL pending for the whole process (ShdPnd) as dying; isProcessRunnable says it cannot run', () => {
    const root = fakeProc();
    const both = 'SigPnd:\t0000000000000000\nShdPnd:\t0000000000000100';
    addProcess(root, 30, status('exiting', 'R', [1001, 1001, 1001, 1001], both));
    // SIGKILL in the thread's own mask only does not count (a zombie leader holding one while
    // another thread runs on: whether a kernel allows it is a detail the rule does not lean on).
    const threadOnly = 'SigPnd:\t0000000000000100\nShdPnd:\t0000000000000000';
    addProcess(root, 31, status('forged', 'Z', [1001, 1001, 1001, 1001], threadOnly));
    fs.mkdirSync(path.join(root, '31', 'task', '33'), { recursive: true });
    fs.writeFileSync(
      path.join(root, '31', 'task', '33', 'stat'),
      '33 (worker) R 1 31 31 0 -1 0 0 0 0 0 0 0 0 0 0 20 0 2 0 555 0 0',
    );
    addProcess(
      root,
      32,
      status(
        'other-signal',
        'S',
        [1001, 1001, 1001, 1001],
        'SigPnd:\t0000000000000001\nShdPnd:\t0000000000004000',
      ),
    );
    const walk = processesOfUid(1001, root);
    expect(walk.alive.map((p) => [p.pid, p.dying]).sort()).toEqual([
      [30, true],
      [31, false],
      [32, false],
    ]);
    expect([30, 31, 32].map((pid) => isProcessRunnable(pid, root))).toEqual([false, true, true]);
    expect(isProcessRunnable(34, root)).toBe(false);
  });

  it('counts an entry that vanished (the process exited) as not alive, and stays complete', () => {
    const root = fakeProc();
    fs.mkdirSync(path.join(root, '30')); // listed, but its status is gone (ENOENT)
    addProcess(root, 31, status('live', 'S', [1001, 1001, 1001, 1001]));
    const walk = processesOfUid(1001, root);
    expect(walk).toMatchObject({ complete: true, vanished: 1 });
    expect(walk.alive.map((p) => p.pid)).toEqual([31]);
  });

  it('is incomplete, never clean, when an entry cannot be read for another reason', () => {
    const root = fakeProc();
    fs.mkdirSync(path.join(root, '40', 'status'), { recursive: true }); // EISDIR, not "exited"
    const walk = processesOfUid(1001, root);
    expect(walk.complete).toBe(false);
    expect(walk.alive).toEqual([]);
    expect(walk.problem).toMatch(/EISDIR/);
  });

  it('is incomplete when a status is garbled or /proc cannot be listed', () => {
    const root = fakeProc();
    fs.mkdirSync(path.join(root, '50'));
    fs.writeFileSync(path.join(root, '50', 'status'), 'Name:\tx\n');
    expect(processesOfUid(1001, root).complete).toBe(false);
    expect(processesOfUid(1001, path.join(root, 'missing')).complete).toBe(false);
  });

  it("settles another uid's process by its Uid line alone, and a malformed Uid line by the whole status", () => {
    const root = fakeProc();
    // Well-formed Uid line of another uid: not ours, whatever else the file holds.
    addProcess(root, 60, `Name:\tother\nUid:\t1002\t1002\t1002\t1002\nState:\tgarbage`);
    expect(processesOfUid(1001, root)).toMatchObject({ complete: true, alive: [] });
    // A Uid line that cannot be read as four ids is never taken as "not ours".
    addProcess(root, 61, 'Name:\tcut\nState:\tS (sleeping)\nUid:\t1001\t1001\n');
    expect(processesOfUid(1001, root).complete).toBe(false);
    addProcess(root, 62, status('mine', 'S', [0, 0, 0, 1001]));
    expect(processesOfUid(1001, root, new Set([61])).alive.map((p) => p.pid)).toEqual([62]);
  });
});

describe('isProcessLive', () => {
  it('is false for an exited process or a plain zombie, true for a runner or a garbled status', () => {
    const root = fakeProc();
    addProcess(root, 70, status('runner', 'R', [1, 1, 1, 1]));
    addProcess(root, 71, status('zombie', 'Z', [1, 1, 1, 1]));
    fs.mkdirSync(path.join(root, '72'));
    fs.writeFileSync(path.join(root, '72', 'status'), 'garbage');
    expect(isProcessLive(70, root)).toBe(true);
    expect(isProcessLive(71, root)).toBe(false);
    expect(isProcessLive(72, root)).toBe(true);
    expect(isProcessLive(73, root)).toBe(false);
  });
});

describe('process identity and kill (real processes)', () => {
  it('bootId is this boot, a uuid', () => {
    expect(bootId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('is alive for this process, dead for a reused pid, another boot or a missing pid', () => {
    const self = identityOf(process.pid)!;
    expect(self).toEqual({
      pid: process.pid,
      startTicks: readProcessStat(process.pid)!.startTicks,
      bootId: bootId(),
    });
    expect(isSameProcessAlive(self)).toBe(true);
    expect(isSameProcessAlive({ ...self, startTicks: self.startTicks + 1 })).toBe(false);
    expect(isSameProcessAlive({ ...self, bootId: 'another-boot' })).toBe(false);
    expect(isSameProcessAlive({ ...self, pid: 999_999_999 })).toBe(false);
    expect(identityOf(999_999_999)).toBeUndefined();
  });

  it('killPid kills a live child (true), then reports it gone (false); a bad pid throws', async () => {
    const child = spawn('/bin/sleep', ['30']);
    const identity = identityOf(child.pid!)!;
    expect(isSameProcessAlive(identity)).toBe(true);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    expect(killPid(child.pid!)).toBe(true);
    await exited;
    expect(isSameProcessAlive(identity)).toBe(false);
    expect(killPid(child.pid!)).toBe(false);
    expect(() => killPid(-0.5)).toThrow();
  });
});
