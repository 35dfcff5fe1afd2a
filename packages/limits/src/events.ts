import { createMisbehavior, formatBytes } from '@karotte/base';
import type { MisbehaviorRecord } from '@karotte/base';

/**
 * How a limit is enforced on this host:
 * - `prevented`: the kernel enforces it (a value was written and read back).
 * - `detected_and_reaped`: a watchdog notices the overrun after the fact and kills.
 * - `not_supported`: nothing enforces it here.
 */
export const CONTRACTS = ['prevented', 'detected_and_reaped', 'not_supported'] as const;
/** One of {@link CONTRACTS}. */
export type Contract = (typeof CONTRACTS)[number];

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
  /** The kernel's OOM killer killed processes of the group (`count` of them). */
  | 'oom_kill'
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
  /** Where it was read: `memory.events:oom_kill`, `memory.oom_control:oom_kill`, `pids.events:max`, `statfs`, `watchdog`. */
  readonly source: string;
}

/** Turn a limit event into the misbehavior record a verdict carries (score 0, never `error`). */
export function toMisbehavior(event: LimitEvent): MisbehaviorRecord {
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
