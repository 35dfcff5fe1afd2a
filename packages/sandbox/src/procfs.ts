import { readFileSync, readdirSync } from 'node:fs';

/** What the sandbox needs to know about one process, read from `/proc/<pid>/stat` and `status`. */
export interface ProcessInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly pgrp: number;
  readonly state: string;
  /** Start time in clock ticks since boot: (pid, startTime) names a process, a pid alone does not. */
  readonly startTime: number;
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
  if (state === undefined || !Number.isFinite(ppid) || !Number.isFinite(startTime)) return undefined;
  return { pid, ppid, pgrp, state, startTime };
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

/** Real uid of `pid`, or undefined when it is gone. */
export function realUidOf(pid: number): number | undefined {
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

/** Clock ticks since boot now (from /proc/uptime, 10 ms resolution), comparable to `startTime`. */
export function ticksNow(): number {
  const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  return Math.floor(uptime * 100);
}
