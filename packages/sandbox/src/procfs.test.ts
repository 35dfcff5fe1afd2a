import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { identityOf } from '@karotte/base';
import { isSameProcessLiving, processStatsOfUid } from './procfs.js';

describe('procfs', () => {
  it('tells a living process from one that is gone', async () => {
    const me = identityOf(process.pid)!;
    expect(isSameProcessLiving(me)).toBe(true);
    expect(isSameProcessLiving({ ...me, startTicks: me.startTicks + 1 })).toBe(false);
    expect(isSameProcessLiving({ ...me, bootId: 'another-boot' })).toBe(false);
    const child = spawn('/bin/sleep', ['30']);
    const identity = identityOf(child.pid!)!;
    expect(isSameProcessLiving(identity)).toBe(true);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    expect(isSameProcessLiving(identity)).toBe(false);
  });

  it('lists the stats of the processes of a uid, this one included', () => {
    const mine = processStatsOfUid(process.getuid!());
    expect(mine.find((stat) => stat.pid === process.pid)?.ppid).toBe(process.ppid);
  });
});
