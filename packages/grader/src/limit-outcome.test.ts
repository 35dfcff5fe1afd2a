import { describe, expect, it } from 'vitest';
import { LimitsError } from '@karotte/limits';
import { studentLimitOutcome } from './limit-outcome.js';
import { limitHitSchema } from './verdict.js';

describe('studentLimitOutcome', () => {
  it('maps limit events to student limit hits and misbehavior', () => {
    const outcome = studentLimitOutcome([
      {
        limit: 'memory',
        kind: 'oom_kill',
        count: 2,
        atMs: 1,
        observed: 200,
        limitValue: 100,
        source: 'memory.oom_control:oom_kill',
      },
      {
        limit: 'disk_inodes',
        kind: 'full',
        count: 1,
        atMs: 2,
        observed: null,
        limitValue: 10,
        source: 'statfs',
      },
      { limit: 'pids', kind: 'reaped', count: 1, atMs: 3, observed: 99, limitValue: 64, source: 'watchdog' },
    ]);
    expect(outcome.limitHits.map((h) => [h.scope, h.limit, h.enforcement])).toEqual([
      ['student', 'memory', 'prevented'],
      ['student', 'disk', 'prevented'],
      ['student', 'pids', 'detected_and_reaped'],
    ]);
    for (const hit of outcome.limitHits) expect(limitHitSchema.parse(hit)).toEqual(hit);
    expect(outcome.misbehavior.map((m) => m.code)).toEqual(['MEMORY_LIMIT', 'DISK_LIMIT', 'PIDS_LIMIT']);
  });

  it('an OOM kill outside the episode is a host fault: nothing is charged, and it throws HOST_OUT_OF_MEMORY', () => {
    const hostKill = {
      limit: 'memory' as const,
      kind: 'host_oom' as const,
      count: 1,
      atMs: 1,
      observed: 17 * 1024 * 1024,
      limitValue: 256 * 1024 * 1024,
      source: 'memory.oom_control:oom_kill, memory.failcnt 0, peak 17825792 of 268435456 bytes',
    };
    let thrown: unknown;
    try {
      studentLimitOutcome([hostKill]);
    } catch (error) {
      thrown = error;
    }
    expect(LimitsError.isInstance(thrown)).toBe(true);
    expect(thrown).toMatchObject({ code: 'HOST_OUT_OF_MEMORY', kind: 'system' });
    expect((thrown as Error).message).toContain('within its 256 MiB limit');
    // Alongside a real limit hit, the host's fault still wins: the run is not a verdict.
    expect(() =>
      studentLimitOutcome([
        {
          limit: 'pids',
          kind: 'max',
          count: 3,
          atMs: 2,
          observed: 64,
          limitValue: 64,
          source: 'pids.events:max',
        },
        hostKill,
      ]),
    ).toThrow(/outside the episode/);
  });
});
