import { describe, expect, it } from 'vitest';
import { identityOf, readProcessStat } from '@karotte/base';
import { stampAlive } from './identity.js';

describe('stampAlive', () => {
  it('reads a process identity stamp: alive for this process, dead for another boot or start', () => {
    const self = identityOf(process.pid)!;
    expect(stampAlive(`${JSON.stringify(self)}\n`)).toBe(true);
    expect(stampAlive(JSON.stringify({ ...self, bootId: 'another-boot' }))).toBe(false);
    expect(stampAlive(JSON.stringify({ ...self, startTicks: self.startTicks + 1 }))).toBe(false);
  });

  it('still reads the earlier `<pid> <start ticks>` stamp, as of this boot', () => {
    const ticks = readProcessStat(process.pid)!.startTicks;
    expect(stampAlive(`${process.pid} ${ticks}\n`)).toBe(true);
    expect(stampAlive(`${process.pid} ${ticks + 1}`)).toBe(false);
  });

  it('is false for garbage, an unknown key or a duplicate key', () => {
    const self = identityOf(process.pid)!;
    expect(stampAlive('garbage')).toBe(false);
    expect(stampAlive(JSON.stringify({ ...self, extra: 1 }))).toBe(false);
    expect(
      stampAlive(`{"pid":${self.pid},"pid":1,"startTicks":${self.startTicks},"bootId":"${self.bootId}"}`),
    ).toBe(false);
  });
});
