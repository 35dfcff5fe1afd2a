// The watchdog tier, for hosts without usable cgroups (no root, read-only cgroupfs, a
// sandboxing runtime that accepts cgroup writes and enforces nothing). It polls what a uid
// holds in memory and how many processes it runs, and calls a kill callback past a limit.
// Its contract is `detected_and_reaped`, never `prevented`: between two polls a process can
// allocate far past the limit, and the kernel's OOM killer may act first.
import fs from 'node:fs';
import path from 'node:path';
import { parseMountInfo, parseOptions, processesOfUid } from '@karotte/base';
import { z } from 'zod';
import { DEFAULT_WATCHDOG_ENTRY_BUDGET, DEFAULT_WATCHDOG_POLL_MS } from './constants.js';
import type { LimitEvent } from './events.js';
import { pageSize } from './proc.js';

/** What a watchdog found over a limit. */
export interface WatchdogViolation {
  readonly limit: 'memory' | 'pids';
  /** A sentence for logs and verdicts. */
  readonly reason: string;
  readonly reading: WatchdogReading;
  /** The event this violation adds to {@link Watchdog.events}. */
  readonly event: LimitEvent;
}

/** One poll of what a uid holds. */
export interface WatchdogReading {
  readonly atMs: number;
  /** Live (non-zombie) processes holding the watched uid (real, effective, saved or fs uid). */
  readonly pids: readonly number[];
  /** Sum of resident set sizes (from /proc/<pid>/statm). */
  readonly rssBytes: number;
  /** Bytes of files the uid owns in RAM-backed file systems (tmpfs, ramfs). */
  readonly ramFileBytes: number;
  /** Entries the uid owns in RAM-backed file systems. */
  readonly ramFileEntries: number;
  /** Bytes of SysV shared memory segments the uid created (by creator uid, which IPC_SET cannot change). */
  readonly sysvShmBytes: number;
  /** rssBytes + ramFileBytes + sysvShmBytes. */
  readonly totalBytes: number;
  /** True when a walk hit its budget: the reading is a lower bound, and counts as a violation. */
  readonly unbounded: boolean;
}

/** Options of {@link createWatchdog}. Strict. */
export const watchdogOptionsSchema = z
  .object({
    /** The student's uid (>= 1000: the watchdog kills by it). */
    uid: z.number().int().min(1000).max(4_294_967_294),
    /** Memory limit of the uid (RSS + RAM-backed files + SysV shm). @default unset (not watched) */
    memoryBytes: z.number().int().positive().optional(),
    /** Most processes the uid may run. @default unset (not watched) */
    pidsMax: z.number().int().positive().optional(),
    /** Poll interval. @default DEFAULT_WATCHDOG_POLL_MS (100) */
    pollMs: z.number().int().min(10).max(60_000).default(DEFAULT_WATCHDOG_POLL_MS),
    /** Entries owned by the uid in RAM-backed file systems past which a reading is unbounded. @default DEFAULT_WATCHDOG_ENTRY_BUDGET (10000) */
    entryBudget: z.number().int().min(1).max(1_000_000).default(DEFAULT_WATCHDOG_ENTRY_BUDGET),
    /** RAM-backed directories to walk. @default every tmpfs and ramfs mount in /proc/self/mountinfo */
    ramRoots: z.array(z.string().startsWith('/')).max(256).optional(),
    /**
     * Called on a violation (awaited; a throw is kept in `lastError`, the watch goes on).
     * The reaper kills here; the reading's `pids` is a snapshot, not a safe kill list.
     */
    onViolation: z.custom<(violation: WatchdogViolation) => void | Promise<void>>(
      (value) => typeof value === 'function',
      { error: 'expected a function' },
    ),
  })
  .strict();

/** Options of {@link createWatchdog} as a caller writes them. */
export type WatchdogOptions = z.input<typeof watchdogOptionsSchema>;

/** A running watchdog. */
export interface Watchdog {
  /** Always `detected_and_reaped`: a watchdog notices after the fact. */
  readonly contract: 'detected_and_reaped';
  /** Read once now (also used by every poll). */
  read(): Promise<WatchdogReading>;
  /** Violations reported so far, as limit events. */
  events(): LimitEvent[];
  /** Highest total bytes seen. */
  readonly peakBytes: number;
  /** The last error of a poll or of the callback. */
  readonly lastError: unknown;
  stop(): Promise<void>;
}

/** Sum the bytes of SysV segments by creator uid, from /proc/sysvipc/shm text. */
export function sysvShmBytesByCreator(text: string, uid: number): number {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const header = (lines[0] ?? '').trim().split(/\s+/);
  const cuidAt = header.indexOf('cuid');
  const sizeAt = header.indexOf('size');
  const rssAt = header.indexOf('rss');
  if (cuidAt < 0 || sizeAt < 0) return 0;
  let total = 0;
  for (const line of lines.slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (Number(fields[cuidAt]) !== uid) continue;
    // Resident bytes when the kernel reports them (pages touched), else the segment size.
    const bytes = rssAt >= 0 ? Number(fields[rssAt]) : Number(fields[sizeAt]);
    if (Number.isFinite(bytes)) total += bytes;
  }
  return total;
}

/** RAM-backed mount points of this mount namespace. */
function ramBackedMounts(): string[] {
  const mounts = parseMountInfo(fs.readFileSync('/proc/self/mountinfo', 'utf8')).entries;
  return mounts
    .filter((mount) => mount.fsType === 'tmpfs' || mount.fsType === 'ramfs')
    .map((mount) => mount.mountPoint);
}

interface WalkTotals {
  bytes: number;
  entries: number;
  visits: number;
  unbounded: boolean;
}

/**
 * Count what `uid` owns under `root`, without following symlinks and without crossing into
 * other file systems; descends into everyone's directories (a student can hide files in a
 * world-writable directory of another uid). Bounded: stops with `unbounded` once the uid owns
 * more than `budget` entries or after `2 × budget` visits of others' entries.
 */
async function walkOwned(root: string, uid: number, budget: number, totals: WalkTotals): Promise<void> {
  let rootStat: fs.Stats;
  try {
    rootStat = await fs.promises.lstat(root);
  } catch {
    return;
  }
  if (!rootStat.isDirectory()) return;
  const stack: string[] = [root];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let names: string[];
    try {
      names = await fs.promises.readdir(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      totals.visits += 1;
      if (totals.visits > 2 * budget + totals.entries) {
        totals.unbounded = true;
        return;
      }
      const full = path.join(dir, name);
      let stat: fs.Stats;
      try {
        stat = await fs.promises.lstat(full);
      } catch {
        continue;
      }
      if (stat.dev !== rootStat.dev) continue;
      if (stat.uid === uid) {
        totals.entries += 1;
        totals.bytes += stat.blocks * 512;
        if (totals.entries > budget) {
          totals.unbounded = true;
          return;
        }
      }
      if (stat.isDirectory()) stack.push(full);
    }
  }
}

/**
 * Read what `uid` holds now: processes and their RSS, RAM-backed files, SysV shm by creator.
 */
export async function readUidUsage(
  uid: number,
  options: { entryBudget: number; ramRoots?: readonly string[] | undefined },
): Promise<WatchdogReading> {
  const page = pageSize();
  const pids: number[] = [];
  let rssBytes = 0;
  for (const { pid } of processesOfUid(uid).alive) {
    pids.push(pid);
    try {
      const statm = fs.readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ');
      rssBytes += Number(statm[1] ?? 0) * page;
    } catch {
      // exited
    }
  }
  const totals: WalkTotals = { bytes: 0, entries: 0, visits: 0, unbounded: false };
  const roots = options.ramRoots ?? ramBackedMounts();
  for (const root of roots) {
    if (totals.unbounded) break;
    await walkOwned(root, uid, options.entryBudget, totals);
  }
  let sysvShmBytes = 0;
  try {
    sysvShmBytes = sysvShmBytesByCreator(fs.readFileSync('/proc/sysvipc/shm', 'utf8'), uid);
  } catch {
    // no SysV IPC in this kernel
  }
  return {
    atMs: Date.now(),
    pids,
    rssBytes,
    ramFileBytes: totals.bytes,
    ramFileEntries: totals.entries,
    sysvShmBytes,
    totalBytes: rssBytes + totals.bytes + sysvShmBytes,
    unbounded: totals.unbounded,
  };
}

/**
 * Start a watchdog for `uid`. Each poll reads the uid's usage; past `memoryBytes` (or with an
 * unbounded reading) or past `pidsMax` it calls `onViolation`, and keeps watching: RAM-backed
 * files survive SIGKILL, so a violation that persists is reported on every poll until cleared.
 */
export function createWatchdog(options: WatchdogOptions): Watchdog {
  const parsed = parseOptions(watchdogOptionsSchema, options, 'watchdog options');
  return new PollingWatchdog(parsed);
}

class PollingWatchdog implements Watchdog {
  readonly contract = 'detected_and_reaped' as const;
  peakBytes = 0;
  lastError: unknown = undefined;
  private readonly recorded: LimitEvent[] = [];
  private readonly counts = new Map<'memory' | 'pids', number>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: z.output<typeof watchdogOptionsSchema>) {
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.poll().finally(() => {
        this.running = null;
        this.schedule();
      });
    }, this.options.pollMs);
    this.timer.unref();
  }

  read(): Promise<WatchdogReading> {
    return readUidUsage(this.options.uid, this.options);
  }

  private async poll(): Promise<void> {
    let reading: WatchdogReading;
    try {
      reading = await this.read();
    } catch (error) {
      this.lastError = error;
      return;
    }
    this.peakBytes = Math.max(this.peakBytes, reading.totalBytes);
    const { memoryBytes, pidsMax } = this.options;
    const violations: WatchdogViolation[] = [];
    if (memoryBytes !== undefined && (reading.totalBytes > memoryBytes || reading.unbounded)) {
      violations.push(
        this.violation(
          'memory',
          reading,
          memoryBytes,
          reading.totalBytes,
          reading.unbounded
            ? `uid ${this.options.uid} owns more than ${this.options.entryBudget} entries in RAM-backed file systems`
            : `uid ${this.options.uid} held ${reading.totalBytes} bytes in memory, past the ${memoryBytes}-byte limit`,
        ),
      );
    }
    if (pidsMax !== undefined && reading.pids.length > pidsMax) {
      violations.push(
        this.violation(
          'pids',
          reading,
          pidsMax,
          reading.pids.length,
          `uid ${this.options.uid} ran ${reading.pids.length} processes, past the limit of ${pidsMax}`,
        ),
      );
    }
    for (const violation of violations) {
      try {
        await this.options.onViolation(violation);
      } catch (error) {
        this.lastError = error;
      }
    }
  }

  private violation(
    limit: 'memory' | 'pids',
    reading: WatchdogReading,
    limitValue: number,
    observed: number,
    reason: string,
  ): WatchdogViolation {
    const count = (this.counts.get(limit) ?? 0) + 1;
    this.counts.set(limit, count);
    const first = this.recorded.findIndex((event) => event.limit === limit);
    const event: LimitEvent = {
      limit,
      kind: 'reaped',
      count,
      atMs: first >= 0 ? this.recorded[first]!.atMs : reading.atMs,
      observed,
      limitValue,
      source: 'watchdog',
    };
    if (first >= 0) this.recorded[first] = event;
    else this.recorded.push(event);
    return { limit, reason, reading, event };
  }

  events(): LimitEvent[] {
    return [...this.recorded];
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.running !== null) await this.running;
  }
}
