// The best-effort tier, for callers without root (laptops, CI): kill the process group, the
// process tree and the session of one pid, repeatedly, until none of them is seen. It can
// never prove anything, and its record says so: `confirmedEmpty` is always false.
//
// This is tree-kill's algorithm (snapshot the descendants, then kill them) plus the process
// group and the session, done over /proc in-process: tree-kill itself spawns `ps` found on
// PATH, which Karotte never does.
import { setTimeout as sleepFor } from 'node:timers/promises';
import {
  BadArgumentError,
  escapeForDisplay,
  isErrno,
  parseOptions,
  readProcessStat,
  toSystemError,
} from '@karotte/base';
import { z } from 'zod';
import { ProcReaperError } from './errors.js';
import { walkAll } from './procfs.js';
import type { BestEffortReapRecord, RecordedProcess } from './record.js';

/** What the best-effort tier cannot see or kill. Copied into every record. */
const BEST_EFFORT_MISSES: readonly string[] = Object.freeze([
  'processes that called setsid() left both the session and the process group, and are found only while they stay in the tree',
  'double-forked processes are reparented to init (or a subreaper) and leave the tree; they are found only through the group or session they kept',
  'processes forked between a snapshot and the kill (fork-and-die relays) are never in any snapshot',
  'processes of the same uid started outside this tree (another login, cron, a daemon the student asked for) are not looked for',
  'a pid that exits and is reused between snapshot and kill can hit an unrelated process of the caller',
  'without root, processes that changed uid (setuid binaries) cannot be signalled',
]);

/** The root process of what to kill. */
export const bestEffortTargetSchema = z
  .object({
    /** Pid of the student's top process (the one the caller spawned). */
    pid: z.number().int().min(2).max(4_194_304),
  })
  .strict();

/** The root process of what to kill. */
export type BestEffortTarget = z.input<typeof bestEffortTargetSchema>;

/** Options of {@link reapBestEffort}. */
export const bestEffortOptionsSchema = z
  .object({
    /**
     * Stop looking after this long.
     * @default 5000
     */
    timeoutMs: z.number().int().positive().max(600_000).default(5_000),
    /**
     * Pause between two passes.
     * @default 50
     */
    passIntervalMs: z.number().int().nonnegative().max(10_000).default(50),
    /**
     * Also kill the target's process group (never the caller's own).
     * @default true
     */
    processGroup: z.boolean().default(true),
    /**
     * Also kill every process in the target's session (never the caller's own), which catches
     * `cmd &` jobs that were reparented to init.
     * @default true
     */
    session: z.boolean().default(true),
    /** Stops the loop early; the record is returned (it was never a confirmation anyway). */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

/** Options of {@link reapBestEffort}. */
export type BestEffortOptions = z.input<typeof bestEffortOptionsSchema>;

const MAX_LISTED = 64;

/**
 * Kill the process group, descendants and session of `target.pid` without root. Returns a
 * record with `tier: 'best_effort'` and `confirmedEmpty: false`: never grade on it as if the
 * student's processes were proven gone.
 *
 * @throws BadArgumentError for invalid options, or a target that is this process or shares
 *   its process group and session in a way that would kill the caller.
 */
export async function reapBestEffort(
  target: BestEffortTarget,
  options: BestEffortOptions = {},
): Promise<BestEffortReapRecord> {
  const { pid } = parseOptions(bestEffortTargetSchema, target, 'best-effort target');
  const parsed = parseOptions(bestEffortOptionsSchema, options, 'best-effort options');
  if (pid === process.pid) throw new BadArgumentError('the target is this process', { field: 'pid' });
  const own = readProcessStat(process.pid);
  if (own === undefined) throw new ProcReaperError('PROC_UNAVAILABLE', 'cannot read /proc/self/stat');
  const start = Date.now();
  const deadline = start + parsed.timeoutMs;
  const root = readProcessStat(pid);
  // Why never our own group or session: kill(-pgid) there would take the caller with it.
  const pgid =
    parsed.processGroup && root !== undefined && root.pgid !== own.pgid && root.pgid > 1 ? root.pgid : 0;
  const sid = parsed.session && root !== undefined && root.sid !== own.sid && root.sid > 1 ? root.sid : 0;
  const killed = { processGroup: 0, tree: 0, session: 0 };
  const counted = new Set<number>();
  // Tracked processes by pid AND start time, so a pid reused by an unrelated process of the
  // caller is not taken for a descendant.
  const tracked = new Map<number, number>(root === undefined ? [] : [[pid, root.startTicks]]);
  let passes = 0;
  let survivors: RecordedProcess[];
  for (;;) {
    passes += 1;
    const { processes } = walkAll();
    // Descendants of everything tracked so far: a child whose parent already died was
    // reparented and is only found if we saw it before (the tree-kill blind spot).
    const children = new Map<number, number[]>();
    for (const [child, stat] of processes) {
      const list = children.get(stat.ppid);
      if (list === undefined) children.set(stat.ppid, [child]);
      else list.push(child);
    }
    const isTracked = (candidate: number): boolean =>
      tracked.get(candidate) === processes.get(candidate)?.startTicks;
    const queue = [...tracked.keys()].filter(isTracked);
    while (queue.length > 0) {
      const next = queue.pop()!;
      for (const child of children.get(next) ?? []) {
        if (!isTracked(child) && child !== process.pid) {
          tracked.set(child, processes.get(child)!.startTicks);
          queue.push(child);
        }
      }
    }
    const targets = new Map<number, 'processGroup' | 'tree' | 'session'>();
    for (const [candidate, stat] of processes) {
      if (candidate === process.pid) continue;
      if (pgid !== 0 && stat.pgid === pgid) targets.set(candidate, 'processGroup');
      else if (isTracked(candidate)) targets.set(candidate, 'tree');
      else if (sid !== 0 && stat.sid === sid) targets.set(candidate, 'session');
    }
    if (targets.size === 0) {
      survivors = [];
      break;
    }
    if (pgid !== 0 && [...targets.values()].includes('processGroup')) signal(-pgid);
    for (const [candidate, how] of targets) {
      if (how !== 'processGroup') signal(candidate);
      if (!counted.has(candidate)) {
        counted.add(candidate);
        killed[how] += 1;
      }
    }
    survivors = [...targets.keys()].slice(0, MAX_LISTED).map((survivor) => ({
      pid: survivor,
      name: escapeForDisplay(processes.get(survivor)?.name ?? '', 64),
    }));
    const now = Date.now();
    if (now >= deadline || parsed.abortSignal?.aborted) break;
    await sleepFor(
      Math.min(parsed.passIntervalMs, deadline - now),
      undefined,
      parsed.abortSignal === undefined ? {} : { signal: parsed.abortSignal },
    ).catch(() => undefined);
  }
  return {
    tier: 'best_effort',
    target: { pid },
    confirmedEmpty: false,
    killed,
    passes,
    startedAt: new Date(start).toISOString(),
    durationMs: Date.now() - start,
    survivorsSeen: survivors,
    misses: [...BEST_EFFORT_MISSES],
  };
}

/** SIGKILL a pid or (negative) a process group; gone or not ours is not an error here. */
function signal(target: number): void {
  try {
    process.kill(target, 'SIGKILL');
  } catch (error) {
    if (isErrno(error, 'ESRCH', 'EPERM')) return;
    throw toSystemError(error, `cannot SIGKILL ${target}`);
  }
}
