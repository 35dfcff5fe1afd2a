import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isSameProcessAlive, isSameProcessLiving, parseStat, readProcess } from './procfs.js';

describe('procfs', () => {
  it('parses stat with a hostile command name, and the task flags', () => {
    const line = '42 (a) b) (c) S 1 42 42 0 -1 4194564 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0';
    expect(parseStat(42, line)).toEqual({
      pid: 42,
      ppid: 1,
      pgrp: 42,
      state: 'S',
      startTime: 12345,
      flags: 4194564,
    });
  });

  it('tells a living process from one that is gone', async () => {
    const me = readProcess(process.pid)!;
    expect(isSameProcessLiving(process.pid, me.startTime)).toBe(true);
    expect(isSameProcessLiving(process.pid, me.startTime + 1)).toBe(false);
    const child = spawn('/bin/sleep', ['30']);
    const info = readProcess(child.pid!)!;
    expect(isSameProcessLiving(child.pid!, info.startTime)).toBe(true);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    expect(isSameProcessLiving(child.pid!, info.startTime)).toBe(false);
    expect(isSameProcessAlive(child.pid!, info.startTime)).toBe(false);
  });
});
