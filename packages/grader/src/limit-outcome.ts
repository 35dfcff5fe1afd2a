import { escapeForDisplay } from '@karotte/base';
import { hostFaultOf, toMisbehavior } from '@karotte/limits';
import type { LimitEvent } from '@karotte/limits';
import type { MisbehaviorRecord } from '@karotte/base';
import type { LimitHit } from './verdict.js';

/**
 * Turn the student's limit events (`@karotte/limits`: `sandbox.limitEvents()`) into what
 * `collectAndGrade` records: `limitHits` (scope `student`) and the matching misbehavior
 * (`MEMORY_LIMIT`, `PIDS_LIMIT`, `DISK_LIMIT`), which make the run `failed` with score 0.
 *
 * An OOM kill outside the episode (`host_oom`: the kernel killed a student process while the
 * episode stayed within its own limit, in a global OOM or an ancestor's) is no verdict on the
 * student at all: nothing of it is charged, and this throws, so no caller can grade an episode
 * the host broke as if nothing happened.
 *
 * @throws LimitsError `HOST_OUT_OF_MEMORY` (kind `system`) when an event is a host fault: the
 *   run is `error`, an infrastructure fault of the host.
 */
export function studentLimitOutcome(events: readonly LimitEvent[]): {
  readonly limitHits: LimitHit[];
  readonly misbehavior: MisbehaviorRecord[];
} {
  const fault = hostFaultOf(events);
  if (fault !== undefined) throw fault;
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
