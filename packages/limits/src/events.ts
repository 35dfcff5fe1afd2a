import { BadArgumentError, createMisbehavior, formatBytes } from '@karotte/base';
import type { MisbehaviorRecord } from '@karotte/base';
import { LimitsError } from './errors.js';

/**
 * How a limit is enforced on this host:
 * - `prevented`: the kernel enforces it (a value was written and read back).
 * - `detected_and_reaped`: a watchdog notices the overrun after the fact and kills.
 * - `not_supported`: nothing enforces it here.
 */
export type LimitContract = 'prevented' | 'detected_and_reaped' | 'not_supported';

/** Every limit this package reports on. */
export const LIMIT_NAMES = [
  'memory',
  'pids',
  'cpu_weight',
  'disk_bytes',
  'disk_inodes',
  'nofile',
  'core',
  'fsize',
  'memlock',
  'oom_score_adj',
] as const;
/** One of {@link LIMIT_NAMES}. */
export type LimitName = (typeof LIMIT_NAMES)[number];

/** What happened at a limit. */
export type LimitEventKind =
  /** The kernel's OOM killer killed processes of the group (`count` of them) at the group's own limit. */
  | 'oom_kill'
  /**
   * The kernel's OOM killer killed processes of the group (`count` of them) while the group was
   * within its own limit: an OOM outside it (the host ran out of memory, or an ancestor's limit).
   * An infrastructure fault, never the student's: see {@link isHostFault}.
   */
  | 'host_oom'
  /** The kernel refused forks at `pids.max` (`count` refusals). */
  | 'max'
  /** The quota was found full (no free blocks or no free inodes). */
  | 'full'
  /** The watchdog found usage over the limit and called its kill callback. */
  | 'reaped';

/**
 * A limit the student hit, as a structured, JSON-serialisable record a verdict can carry.
 * Counters are diffed since the group or quota was created.
 */
export interface LimitEvent {
  readonly limit: 'memory' | 'pids' | 'disk_bytes' | 'disk_inodes';
  readonly kind: LimitEventKind;
  /** How many times it happened since creation (kills, refusals; 1 for `full`). */
  readonly count: number;
  /** When it was first seen, in ms since the epoch (counters are read on `events()` and by a background poll). */
  readonly atMs: number;
  /** Usage seen with it: peak bytes (memory), peak or current processes (pids), used bytes or inodes (disk). Null when unreadable. */
  readonly observed: number | null;
  /** The limit in force (read back from the kernel). */
  readonly limitValue: number;
  /**
   * Where it was read: `memory.events:oom_kill`, `memory.oom_control:oom_kill`, `pids.events:max`,
   * `statfs`, `watchdog`; for `host_oom`, the counter and why the group's own limit was not reached.
   */
  readonly source: string;
}

/**
 * True when `event` is the host's fault, not the student's (`host_oom`: an OOM kill while the
 * group stayed within its own limit). Such an event is no limit hit and no misbehavior: the
 * episode's run is an infrastructure fault (`error`), never a verdict on the student.
 */
export function isHostFault(event: LimitEvent): boolean {
  return event.kind === 'host_oom';
}

/**
 * The infrastructure fault among `events`, as the error a caller fails the episode with
 * (`HOST_OUT_OF_MEMORY`, kind `system`), or undefined when every event is the student's.
 */
export function hostFaultOf(events: readonly LimitEvent[]): LimitsError | undefined {
  const kills = events.filter(isHostFault);
  if (kills.length === 0) return undefined;
  const count = kills.reduce((sum, event) => sum + event.count, 0);
  const first = kills[0]!;
  return new LimitsError(
    'HOST_OUT_OF_MEMORY',
    `the kernel killed ${count} student process${count === 1 ? '' : 'es'} in an out-of-memory outside the episode (the host or a parent group ran out) while the episode stayed within its ${formatBytes(first.limitValue)} limit (${first.source})`,
  );
}

/**
 * Turn a limit event into the misbehavior record a verdict carries (score 0, never `error`).
 *
 * @throws BadArgumentError for a host fault ({@link isHostFault}): it is not the student's.
 */
export function toMisbehavior(event: LimitEvent): MisbehaviorRecord {
  if (isHostFault(event)) {
    throw new BadArgumentError(
      `a ${event.kind} event is an infrastructure fault, not the student's misbehavior (check isHostFault first)`,
      { field: 'event.kind' },
    );
  }
  switch (event.limit) {
    case 'memory':
      return createMisbehavior(
        'MEMORY_LIMIT',
        event.kind === 'reaped'
          ? `the student's processes held more than ${formatBytes(event.limitValue)} of memory and were killed`
          : `the student hit the ${formatBytes(event.limitValue)} memory limit: the kernel killed ${event.count} process${event.count === 1 ? '' : 'es'}`,
      );
    case 'pids':
      return createMisbehavior(
        'PIDS_LIMIT',
        event.kind === 'reaped'
          ? `the student ran more than ${event.limitValue} processes and they were killed`
          : `the student hit the ${event.limitValue}-process limit: ${event.count} fork${event.count === 1 ? ' was' : 's were'} refused`,
      );
    case 'disk_bytes':
      return createMisbehavior(
        'DISK_LIMIT',
        `the student filled the ${formatBytes(event.limitValue)} disk quota`,
      );
    case 'disk_inodes':
      return createMisbehavior(
        'DISK_LIMIT',
        `the student used all ${event.limitValue} inodes of the disk quota`,
      );
  }
}

/** Remembers when each kind of event was first seen, so repeated reads report a stable `atMs`. */
export class FirstSeen {
  private readonly seen = new Map<string, number>();

  at(key: string, nowMs: number): number {
    const known = this.seen.get(key);
    if (known !== undefined) return known;
    this.seen.set(key, nowMs);
    return nowMs;
  }
}
