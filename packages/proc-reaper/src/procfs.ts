// Reading /proc for the reaper: which processes a uid owns cheaply, the process tree, the PID
// namespace. Parsing stat and status, the uid walk, identities and kills are @karotte/base's.
// Every function takes the procfs root so unit tests can run against a fake tree; production
// passes '/proc'.
import { readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { isDeadState, isErrno, parseProcessStat, toSystemError } from '@karotte/base';
import type { ProcessStat } from '@karotte/base';
import { ProcReaperError } from './errors.js';

const VANISHED = ['ENOENT', 'ESRCH'];

/** Numeric entries of a procfs directory, in the order readdir returns them. */
function numericEntries(dir: string): string[] {
  return readdirSync(dir).filter((name) => /^[1-9]\d*$/.test(name));
}

/** Result of {@link scanOwned}. */
export interface OwnedScan {
  /** Pids whose /proc directory is owned by the uid. */
  readonly owned: readonly number[];
  /** Those of them in a PID namespace other than `ownNamespace`. */
  readonly foreign: readonly number[];
}

/**
 * A cheap pre-scan (one stat per entry, one readlink per match) of the processes whose
 * /proc/<pid> directory the uid owns, and which of them live in another PID namespace.
 *
 * The owner of /proc/<pid> is the effective uid of a dumpable process (root for a
 * non-dumpable one), so this is an accelerator and a count, never a proof: what it misses,
 * the in-cohort kill and the status-based sweep take. Pids in `skip` are not looked at.
 */
export function scanOwned(
  uid: number,
  ownNamespace: string,
  procRoot = '/proc',
  skip: ReadonlySet<number> = new Set(),
): OwnedScan {
  const owned: number[] = [];
  const foreign: number[] = [];
  let entries: string[];
  try {
    entries = numericEntries(procRoot);
  } catch {
    return { owned, foreign };
  }
  for (const entry of entries) {
    if (skip.size > 0 && skip.has(Number(entry))) continue;
    const stats = statSync(`${procRoot}/${entry}`, { throwIfNoEntry: false });
    if (stats?.uid !== uid) continue;
    const pid = Number(entry);
    owned.push(pid);
    let namespace: string;
    try {
      namespace = readlinkSync(`${procRoot}/${entry}/ns/pid`);
    } catch {
      continue; // exited, or not readable: left to the sweep
    }
    if (namespace !== ownNamespace) foreign.push(pid);
  }
  return { owned, foreign };
}

/** Every live process in /proc with its stat fields (for the best-effort tier's tree walk). */
export function walkAll(procRoot = '/proc'): { processes: Map<number, ProcessStat>; complete: boolean } {
  const processes = new Map<number, ProcessStat>();
  let complete = true;
  let entries: string[];
  try {
    entries = numericEntries(procRoot);
  } catch {
    return { processes, complete: false };
  }
  for (const entry of entries) {
    let text: string;
    try {
      text = readFileSync(`${procRoot}/${entry}/stat`, 'latin1');
    } catch (error) {
      // Exited between readdir and the read: not alive, and the walk stays complete.
      if (!isErrno(error, ...VANISHED)) complete = false;
      continue;
    }
    const stat = parseProcessStat(Number(entry), text);
    if (stat === undefined) {
      complete = false;
      continue;
    }
    if (!isDeadState(stat.state)) processes.set(stat.pid, stat);
  }
  return { processes, complete };
}

/** The PID-namespace link (`pid:[4026531836]`) of a process, or undefined when it exited. */
export function readPidNamespace(pid: number | 'self', procRoot = '/proc'): string | undefined {
  try {
    return readlinkSync(`${procRoot}/${pid}/ns/pid`);
  } catch (error) {
    if (isErrno(error, ...VANISHED)) return undefined;
    throw toSystemError(error, `cannot read the PID namespace of ${pid}`);
  }
}

/** Throw unless `procRoot` is the procfs of this process's own PID namespace. */
export function assertOwnProcfs(procRoot = '/proc'): void {
  let self: string;
  try {
    self = readlinkSync(`${procRoot}/self`);
  } catch (error) {
    throw new ProcReaperError('PROC_UNAVAILABLE', `${procRoot} is not a mounted procfs: ${describe(error)}`, {
      cause: error,
    });
  }
  if (self !== String(process.pid)) {
    throw new ProcReaperError(
      'PROC_UNAVAILABLE',
      `${procRoot} belongs to another PID namespace (${procRoot}/self is ${self}, this process is ${process.pid})`,
    );
  }
}

function describe(error: unknown): string {
  if (isErrno(error)) return error.code;
  return error instanceof Error ? error.message : String(error);
}
