// Reading /proc: who is alive, as whom, in which PID namespace. Every function takes the
// procfs root so unit tests can run against a fake tree; production passes '/proc'.
import { readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { isErrno, toSystemError } from '@karotte/base';
import { ProcReaperError } from './errors.js';

/** A live (not zombie, not dead) process seen in a walk. */
export interface LiveProcess {
  readonly pid: number;
  /** `Name:` from status (the kernel's comm, at most 15 bytes; student-controlled). */
  readonly name: string;
  /** One-letter state (`R`, `S`, `D`, `T`, `t`, ... or `Z` for a zombie leader with live threads). */
  readonly state: string;
  /** In a PID namespace nested below ours (`NSpid:` lists more than one pid). */
  readonly nested: boolean;
}

/** One walk of /proc for a uid. */
export interface WalkResult {
  /** Live processes whose REAL uid is the target uid. */
  readonly alive: readonly LiveProcess[];
  /**
   * False when the walk could not account for every entry it listed (readdir failed, an
   * entry was unreadable for a reason other than the process having exited, or its status
   * was garbled). An incomplete walk is a lower bound only and never proves emptiness.
   */
  readonly complete: boolean;
  /** Entries listed by readdir that had exited by the time they were read. */
  readonly vanished: number;
  /** Why the walk is incomplete, when it is. */
  readonly problem?: string;
}

/** Fields of /proc/<pid>/status the reaper uses. */
export interface ProcStatus {
  readonly name: string;
  readonly state: string;
  readonly realUid: number;
  readonly threads: number;
  /** The pid in each nested PID namespace, outermost first (`NSpid:`). */
  readonly nsPids: readonly number[];
}

/** Fields of /proc/<pid>/stat the reaper uses. */
export interface ProcStat {
  readonly state: string;
  readonly ppid: number;
  readonly pgid: number;
  readonly sid: number;
  /** Start time in clock ticks since boot: with the pid, an identity that survives PID reuse. */
  readonly startTime: number;
}

const VANISHED = ['ENOENT', 'ESRCH'];

/** Parse /proc/<pid>/status; undefined when a field the reaper needs is missing or garbled. */
export function parseStatus(text: string): ProcStatus | undefined {
  let name: string | undefined;
  let state: string | undefined;
  let realUid: number | undefined;
  let threads = 1;
  let nsPids: number[] = [];
  for (const line of text.split('\n')) {
    const tab = line.indexOf(':');
    if (tab < 0) continue;
    const key = line.slice(0, tab);
    const value = line.slice(tab + 1).trim();
    switch (key) {
      case 'Name':
        name = value;
        break;
      case 'State':
        state = value.slice(0, 1);
        break;
      case 'Uid': {
        const first = value.split(/\s+/)[0];
        if (first !== undefined && /^\d+$/.test(first)) realUid = Number(first);
        break;
      }
      case 'Threads':
        if (/^\d+$/.test(value)) threads = Number(value);
        break;
      case 'NSpid':
        nsPids = value
          .split(/\s+/)
          .filter((part) => /^\d+$/.test(part))
          .map(Number);
        break;
      default:
        break;
    }
  }
  if (name === undefined || state === undefined || state.length !== 1 || realUid === undefined)
    return undefined;
  return { name, state, realUid, threads, nsPids };
}

/**
 * Parse /proc/<pid>/stat. The comm field is in parentheses and may itself contain `)`, spaces
 * and newlines (the student names its processes), so fields are read after the LAST `)`.
 */
export function parseStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  // fields[0] is field 3 (state); starttime is field 22.
  const state = fields[0];
  const numbers = [fields[1], fields[2], fields[3], fields[19]].map((field) =>
    field !== undefined && /^-?\d+$/.test(field) ? Number(field) : undefined,
  );
  const [ppid, pgid, sid, startTime] = numbers;
  if (
    state?.length !== 1 ||
    ppid === undefined ||
    pgid === undefined ||
    sid === undefined ||
    startTime === undefined
  ) {
    return undefined;
  }
  return { state, ppid, pgid, sid, startTime };
}

/** True for the states of a process that can no longer run: zombie and dead. */
export function isDeadState(state: string): boolean {
  return state === 'Z' || state === 'X' || state === 'x';
}

/** Numeric entries of a procfs directory, in the order readdir returns them. */
function numericEntries(dir: string): string[] {
  return readdirSync(dir).filter((name) => /^[1-9]\d*$/.test(name));
}

/**
 * Read a small procfs file. Returns undefined when the process has exited (the entry
 * vanished); throws the raw error otherwise.
 */
function readProcFile(file: string): string | undefined {
  try {
    return readFileSync(file, 'latin1');
  } catch (error) {
    if (isErrno(error, ...VANISHED)) return undefined;
    throw error;
  }
}

/**
 * A zombie thread-group leader still counts as alive while any of its other threads runs
 * (`pthread_exit` in main): its status says `Z`, but SIGKILL to the tgid is still needed.
 */
function hasLiveThreads(procRoot: string, pid: number): boolean {
  let tids: string[];
  try {
    tids = numericEntries(`${procRoot}/${pid}/task`);
  } catch (error) {
    if (isErrno(error, ...VANISHED)) return false;
    throw error;
  }
  for (const tid of tids) {
    if (tid === String(pid)) continue;
    const stat = readProcFile(`${procRoot}/${pid}/task/${tid}/stat`);
    if (stat === undefined) continue;
    const parsed = parseStat(stat);
    if (parsed === undefined || !isDeadState(parsed.state)) return true;
  }
  return false;
}

/**
 * Walk /proc once and list the live processes whose REAL uid is `uid`.
 *
 * Real uid, not effective: a student process keeps its real uid through a setuid binary,
 * and a root process that briefly takes the student's effective uid (a harness helper acting
 * as the student) is not the student's. Zombies are not alive (they run nothing); a zombie
 * leader whose other threads still run is.
 *
 * An entry that vanished between readdir and the read is a process that exited: it is not
 * alive, and the walk goes on. Any other failure makes the walk incomplete.
 */
export function walkUid(uid: number, procRoot = '/proc'): WalkResult {
  let entries: string[];
  try {
    entries = numericEntries(procRoot);
  } catch (error) {
    return {
      alive: [],
      complete: false,
      vanished: 0,
      problem: `cannot list ${procRoot}: ${describe(error)}`,
    };
  }
  const alive: LiveProcess[] = [];
  let vanished = 0;
  let problem: string | undefined;
  for (const entry of entries) {
    let text: string | undefined;
    try {
      text = readProcFile(`${procRoot}/${entry}/status`);
    } catch (error) {
      problem ??= `cannot read ${procRoot}/${entry}/status: ${describe(error)}`;
      continue;
    }
    if (text === undefined) {
      vanished += 1;
      continue;
    }
    const status = parseStatus(text);
    if (status === undefined) {
      problem ??= `garbled ${procRoot}/${entry}/status`;
      continue;
    }
    if (status.realUid !== uid) continue;
    const pid = Number(entry);
    if (isDeadState(status.state)) {
      try {
        if (!hasLiveThreads(procRoot, pid)) continue;
      } catch (error) {
        problem ??= `cannot read the threads of ${pid}: ${describe(error)}`;
        continue;
      }
    }
    alive.push({ pid, name: status.name, state: status.state, nested: status.nsPids.length > 1 });
  }
  return problem === undefined
    ? { alive, complete: true, vanished }
    : { alive, complete: false, vanished, problem };
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
 * the in-cohort kill and the status-based sweep take.
 */
export function scanOwned(uid: number, ownNamespace: string, procRoot = '/proc'): OwnedScan {
  const owned: number[] = [];
  const foreign: number[] = [];
  let entries: string[];
  try {
    entries = numericEntries(procRoot);
  } catch {
    return { owned, foreign };
  }
  for (const entry of entries) {
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
export function walkAll(procRoot = '/proc'): {
  processes: Map<number, ProcStat & { name: string }>;
  complete: boolean;
} {
  const processes = new Map<number, ProcStat & { name: string }>();
  let complete = true;
  let entries: string[];
  try {
    entries = numericEntries(procRoot);
  } catch {
    return { processes, complete: false };
  }
  for (const entry of entries) {
    let text: string | undefined;
    try {
      text = readProcFile(`${procRoot}/${entry}/stat`);
    } catch {
      complete = false;
      continue;
    }
    if (text === undefined) continue;
    const stat = parseStat(text);
    if (stat === undefined) {
      complete = false;
      continue;
    }
    if (isDeadState(stat.state)) continue;
    const open = text.indexOf('(');
    const close = text.lastIndexOf(')');
    processes.set(Number(entry), {
      ...stat,
      name: open >= 0 && close > open ? text.slice(open + 1, close) : '',
    });
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

/** Status of one process, or undefined when it exited. */
export function readStatus(pid: number, procRoot = '/proc'): ProcStatus | undefined {
  const text = readProcFile(`${procRoot}/${pid}/status`);
  return text === undefined ? undefined : parseStatus(text);
}

/**
 * True while `pid` can still run: not exited, not a zombie (unless other threads of it still
 * run). A status that cannot be parsed counts as alive: never prove emptiness from garbage.
 */
export function isLive(pid: number, procRoot = '/proc'): boolean {
  const text = readProcFile(`${procRoot}/${pid}/status`);
  if (text === undefined) return false;
  const status = parseStatus(text);
  if (status === undefined) return true;
  return !isDeadState(status.state) || hasLiveThreads(procRoot, pid);
}

/** Stat of one process, or undefined when it exited. */
export function readStat(pid: number, procRoot = '/proc'): ProcStat | undefined {
  const text = readProcFile(`${procRoot}/${pid}/stat`);
  return text === undefined ? undefined : parseStat(text);
}

/**
 * SIGKILL one pid. Returns false when it had already exited. As root with CAP_KILL nothing
 * else can fail; anything that does is a host fault.
 */
export function killPid(pid: number): boolean {
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch (error) {
    if (isErrno(error, 'ESRCH')) return false;
    throw toSystemError(error, `cannot SIGKILL ${pid}`);
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
