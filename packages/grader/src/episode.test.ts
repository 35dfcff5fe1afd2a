import { describe, expect, it } from 'vitest';
import { studentLimitOutcome } from './episode.js';
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
});
