import { readFileSync, readdirSync } from 'node:fs';

/** What the sandbox needs to know about one process, read from `/proc/<pid>/stat` and `status`. */
export interface ProcessInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly pgrp: number;
  readonly state: string;
  /** Start time in clock ticks since boot: (pid, startTime) names a process, a pid alone does not. */
  readonly startTime: number;
  /** Kernel task flags (PF_*), field 9 of stat. */
  readonly flags: number;
}

/** Parse `/proc/<pid>/stat`; the command name may contain spaces and parentheses, so split at the last `)`. */
export function parseStat(pid: number, text: string): ProcessInfo | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).split(' ');
  // fields[0] is field 3 (state); starttime is field 22.
  const state = fields[0];
  const ppid = Number(fields[1]);
  const pgrp = Number(fields[2]);
  const startTime = Number(fields[19]);
  const flags = Number(fields[6]);
  if (state === undefined || !Number.isFinite(ppid) || !Number.isFinite(startTime)) return undefined;
  return { pid, ppid, pgrp, state, startTime, flags: Number.isFinite(flags) ? flags : 0 };
}

/** The process `pid`, or undefined when it is gone (or a zombie, when `live` is set). */
export function readProcess(pid: number): ProcessInfo | undefined {
  try {
    return parseStat(pid, readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** True when the process named by (pid, startTime) still exists and is not a zombie. */
export function isSameProcessAlive(pid: number, startTime: number): boolean {
  const info = readProcess(pid);
  return info !== undefined && info.startTime === startTime && info.state !== 'Z' && info.state !== 'X';
}

/** PF_EXITING: the task is in do_exit (a SIGKILLed namespace init stays there until its namespace is empty). */
const PF_EXITING = 0x4;
/** SIGKILL's bit in the pending-signal masks of /proc/<pid>/status. */
const SIGKILL_BIT = 1n << 8n;

/**
 * True when the process named by (pid, startTime) lives and is not on its way out: not a
 * zombie, not exiting, no SIGKILL pending. A killed namespace init takes a moment to die (it
 * first kills and waits for its namespace); for the caller it is already gone.
 */
export function isSameProcessLiving(pid: number, startTime: number): boolean {
  const info = readProcess(pid);
  if (info === undefined || info.startTime !== startTime || info.state === 'Z' || info.state === 'X') {
    return false;
  }
  if ((info.flags & PF_EXITING) !== 0) return false;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    for (const match of status.matchAll(/^(?:SigPnd|ShdPnd):\s+([0-9a-f]+)$/gm)) {
      if ((BigInt(`0x${match[1]!}`) & SIGKILL_BIT) !== 0n) return false;
    }
  } catch {
    return false;
  }
  return true;
}

/** Real uid of `pid`, or undefined when it is gone. */
function realUidOf(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^Uid:\s+(\d+)/m.exec(status);
    return match?.[1] === undefined ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

/** Every live (non-zombie) process whose real uid is `uid`, from a complete `/proc` walk. */
export function processesOfUid(uid: number): ProcessInfo[] {
  const out: ProcessInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (realUidOf(pid) !== uid) continue;
    const info = readProcess(pid);
    if (info !== undefined && info.state !== 'Z' && info.state !== 'X') out.push(info);
  }
  return out;
}

/** Children of `pid` (all threads), from `/proc/<pid>/task/<tid>/children`. */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) for (const child of text.split(/\s+/)) out.push(Number(child));
    } catch {
      // task gone
    }
  }
  return out;
}

/** This boot's id: leases from an earlier boot are stale whatever their pid says. */
export function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}
