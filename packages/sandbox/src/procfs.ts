// What the sandbox asks /proc beyond @karotte/base's readers: the stats of a uid's processes
// (for the shell's job tracking), whether a namespace init is on its way out, and children.
import { readFileSync, readdirSync } from 'node:fs';
import {
  isDeadState,
  isKillPending,
  isSameProcessAlive,
  processesOfUid,
  readProcessStat,
  readProcessStatus,
} from '@karotte/base';
import type { ProcessIdentity, ProcessStat } from '@karotte/base';

/**
 * The stat of every live process holding `uid` (real, effective, saved or fs uid), from one
 * walk of /proc. A process that exits between the walk and its stat read is left out.
 */
export function processStatsOfUid(uid: number): ProcessStat[] {
  const out: ProcessStat[] = [];
  for (const { pid } of processesOfUid(uid).alive) {
    const stat = readProcessStat(pid);
    if (stat !== undefined && !isDeadState(stat.state)) out.push(stat);
  }
  return out;
}

/** PF_EXITING: the task is in do_exit (a SIGKILLed namespace init stays there until its namespace is empty). */
const PF_EXITING = 0x4;

/**
 * True when the process `identity` names lives and is not on its way out: not a zombie, not
 * exiting, no SIGKILL pending. A killed namespace init takes a moment to die (it first kills
 * and waits for its namespace); for the caller it is already gone.
 */
export function isSameProcessLiving(identity: ProcessIdentity): boolean {
  if (!isSameProcessAlive(identity)) return false;
  const stat = readProcessStat(identity.pid);
  if (stat === undefined || (stat.flags & PF_EXITING) !== 0) return false;
  const status = readProcessStatus(identity.pid);
  return status !== undefined && !isKillPending(status);
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

/** The argument vector of `pid` as the kernel shows it, or undefined once it is gone. */
export function commandLineOf(pid: number): Buffer | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`);
  } catch {
    return undefined;
  }
}
