import { escapeForDisplay } from '@karotte/base';
import { toMisbehavior } from '@karotte/limits';
import type { LimitEvent } from '@karotte/limits';
import type { MisbehaviorRecord } from '@karotte/base';
import type { LimitHit } from './verdict.js';

/**
 * Turn the student's limit events (`@karotte/limits`: `sandbox.limitEvents()`) into what
 * `collectAndGrade` records: `limitHits` (scope `student`) and the matching misbehavior
 * (`MEMORY_LIMIT`, `PIDS_LIMIT`, `DISK_LIMIT`), which make the run `failed` with score 0.
 */
export function studentLimitOutcome(events: readonly LimitEvent[]): {
  readonly limitHits: LimitHit[];
  readonly misbehavior: MisbehaviorRecord[];
} {
  const limitHits = events.map((event): LimitHit => ({
    scope: 'student',
    limit: event.limit === 'memory' ? 'memory' : event.limit === 'pids' ? 'pids' : 'disk',
    limitValue: event.limitValue,
    observed: event.observed,
    // A kernel counter (oom_kill, pids max, a full quota) means the kernel stopped it; a
    // watchdog reap means it was detected and reaped after the fact.
    enforcement: event.kind === 'reaped' ? 'detected_and_reaped' : 'prevented',
    message: escapeForDisplay(`${event.limit} ${event.kind} ×${event.count} (${event.source})`),
  }));
  return { limitHits, misbehavior: events.map(toMisbehavior) };
}
