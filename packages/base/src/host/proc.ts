// Reading /proc (proc(5)). Synchronous: every read is one small file the kernel renders on
// demand. A process can exit between any two reads, so "gone" (ENOENT, ESRCH) is an answer,
// never an error; anything else is a host fault and throws. Every reader takes the procfs root
// so unit tests can run against a fake tree of plain files; production passes '/proc'.
import { closeSync, openSync, readFileSync, readSync, readdirSync } from 'node:fs';
import { isErrno, SystemError, toSystemError } from '../errors.js';

const VANISHED = ['ENOENT', 'ESRCH'] as const;

/** Fields of `/proc/<pid>/stat`. */
export interface ProcessStat {
  readonly pid: number;
  /** `Name` in parentheses (field 2): the kernel's comm, at most 15 bytes, chosen by the process. */
  readonly name: string;
  /** One-letter state (field 3): `R`, `S`, `D`, `T`, `t`, `I`, `Z` (zombie), `X`/`x` (dead). */
  readonly state: string;
  readonly ppid: number;
  /** Process group (field 5). */
  readonly pgid: number;
  /** Session (field 6). */
  readonly sid: number;
  /** Kernel task flags (field 9, PF_*: `PF_EXITING` is 0x4). */
  readonly flags: number;
  /** Start time in clock ticks since boot (field 22): with the pid and the boot id, an identity. */
  readonly startTicks: number;
}

/** Fields of `/proc/<pid>/status`. */
export interface ProcessStatus {
  /** `Name:` (the comm; student-controlled). */
  readonly name: string;
  /** One-letter state, as in {@link ProcessStat}. */
  readonly state: string;
  /** `Uid:` real, effective, saved set and filesystem uid, in this order. */
  readonly uids: readonly [real: number, effective: number, saved: number, fs: number];
  readonly threads: number;
  /** The pid in each nested PID namespace, outermost first (`NSpid:`). */
  readonly nsPids: readonly number[];
  /** Signals pending for the thread or the whole process (`SigPnd` | `ShdPnd`), bit n-1 for signal n. */
  readonly pendingSignals: bigint;
  /** Signals pending for the whole process only (`ShdPnd`), bit n-1 for signal n. */
  readonly sharedPendingSignals: bigint;
}

/**
 * Parse `/proc/<pid>/stat`. The comm (field 2) is in parentheses and may itself contain `)`,
 * spaces and newlines (a process names itself with prctl), so the fields are read after the
 * LAST `)`: the kernel never escapes it, and nothing after the comm can contain one. Returns
 * undefined for a line without the fields used here.
 */
export function parseProcessStat(pid: number, text: string): ProcessStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const fields = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  // fields[0] is field 3 (state), so field n is fields[n - 3]: starttime (22) is fields[19].
  const state = fields[0];
  const numbers = [fields[1], fields[2], fields[3], fields[6], fields[19]].map((field) =>
    field !== undefined && /^-?\d+$/.test(field) ? Number(field) : undefined,
  );
  const [ppid, pgid, sid, flags, startTicks] = numbers;
  if (
    state?.length !== 1 ||
    ppid === undefined ||
    pgid === undefined ||
    sid === undefined ||
    flags === undefined ||
    startTicks === undefined
  ) {
    return undefined;
  }
  return { pid, name: text.slice(open + 1, close), state, ppid, pgid, sid, flags, startTicks };
}

/**
 * Parse `/proc/<pid>/status` (`Key:\tvalue` lines). Returns undefined when `Name`, `State` or
 * all four `Uid` fields are missing or garbled: a caller proving that no process of a uid
 * is left must never read garbage as "not this uid".
 */
export function parseProcessStatus(text: string): ProcessStatus | undefined {
  let name: string | undefined;
  let state: string | undefined;
  let uids: [number, number, number, number] | undefined;
  let threads = 1;
  let nsPids: number[] = [];
  let pendingSignals = 0n;
  let sharedPendingSignals = 0n;
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon);
    const value = line.slice(colon + 1).trim();
    switch (key) {
      case 'Name':
        name = value;
        break;
      case 'State':
        state = value.slice(0, 1);
        break;
      case 'Uid': {
        const parts = value.split(/\s+/);
        if (parts.length === 4 && parts.every((part) => /^\d+$/.test(part))) {
          uids = parts.map(Number) as [number, number, number, number];
        }
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
      case 'SigPnd':
        if (/^[0-9a-f]+$/.test(value)) pendingSignals |= BigInt(`0x${value}`);
        break;
      case 'ShdPnd':
        if (/^[0-9a-f]+$/.test(value)) {
          pendingSignals |= BigInt(`0x${value}`);
          sharedPendingSignals |= BigInt(`0x${value}`);
        }
        break;
      default:
        break;
    }
  }
  if (name === undefined || state?.length !== 1 || uids === undefined) return undefined;
  return { name, state, uids, threads, nsPids, pendingSignals, sharedPendingSignals };
}

/** SIGKILL's bit in the pending-signal masks of /proc/<pid>/status. */
const SIGKILL_BIT = 1n << 8n;

/**
 * True when SIGKILL is pending for the whole process (`ShdPnd`, what kill() of its pid and
 * kill(-1) queue). Such a process never runs user code again: a process-wide SIGKILL starts a
 * group exit of every thread (unless every thread is already exiting), it cannot be blocked,
 * caught or ignored, it wakes a stopped or traced task, and a fork in flight fails on it. The
 * bit stays set through the whole exit, until the process is reaped, so it also marks one that
 * has taken the signal and is still freeing its memory (a second, for a large one).
 *
 * The thread's own mask (`SigPnd`) is not trusted: whether a SIGKILL can sit there on a thread
 * that will never act on it while the others run on is a kernel detail (a review read it as
 * possible for an exited leader; this project's 6.18 kernel did not even queue a tgkill() to
 * one). A SIGKILL sent only to threads (cgroup v2's `cgroup.kill`) starts the group exit
 * without setting `ShdPnd`: such a process is not seen as dying and is waited for, as before.
 */
export function isKillPending(status: ProcessStatus): boolean {
  return (status.sharedPendingSignals & SIGKILL_BIT) !== 0n;
}

/** True for the states of a process that can no longer run: zombie (`Z`) and dead (`X`, `x`). */
export function isDeadState(state: string): boolean {
  return state === 'Z' || state === 'X' || state === 'x';
}

/** One buffer for every procfs read (they are synchronous): a walk reads thousands of files. */
const procBuffer = Buffer.allocUnsafe(16 * 1024);

/**
 * Read a procfs file: undefined when the process has exited; a `SystemError` for anything else.
 * open, read into a reused buffer, close: `readFileSync`'s fstat and allocation per file cost
 * a third more, which a walk of thousands of processes pays thousands of times.
 */
function readProcFile(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    if (isErrno(error, ...VANISHED)) return undefined;
    throw toSystemError(error, `read ${file}`);
  }
  try {
    let text = '';
    for (;;) {
      const n = readSync(fd, procBuffer, 0, procBuffer.length, null);
      if (n === 0) return text;
      text += procBuffer.toString('latin1', 0, n);
    }
  } catch (error) {
    if (isErrno(error, ...VANISHED)) return undefined;
    throw toSystemError(error, `read ${file}`);
  } finally {
    closeSync(fd);
  }
}

/**
 * The stat of `pid`, or undefined when it has exited (or its stat is garbled).
 * @throws SystemError when /proc cannot be read for another reason.
 */
export function readProcessStat(pid: number, procRoot = '/proc'): ProcessStat | undefined {
  const text = readProcFile(`${procRoot}/${pid}/stat`);
  return text === undefined ? undefined : parseProcessStat(pid, text);
}

/**
 * The status of `pid`, or undefined when it has exited (or its status is garbled).
 * @throws SystemError when /proc cannot be read for another reason.
 */
export function readProcessStatus(pid: number, procRoot = '/proc'): ProcessStatus | undefined {
  const text = readProcFile(`${procRoot}/${pid}/status`);
  return text === undefined ? undefined : parseProcessStatus(text);
}

/**
 * The id of the running boot (`/proc/sys/kernel/random/boot_id`, new on every boot).
 *
 * It throws rather than answer a placeholder: identities are compared across harness runs (a
 * lease or a record of a dead owner), and two boots that both read as `'unknown'` would look
 * like one, so a pid and start time reused after a reboot would pass for the old process.
 * Without a boot id, nothing can be proven alive or dead; the caller must stop (fail closed).
 *
 * @throws SystemError when the file cannot be read.
 */
export function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch (error) {
    throw toSystemError(error, 'read /proc/sys/kernel/random/boot_id');
  }
}

/**
 * The one name of a process that survives pid reuse: a pid alone is reused within seconds on a
 * busy host, a pid and its start time within a boot never are, and the boot id tells boots
 * apart (start ticks count from boot).
 */
export interface ProcessIdentity {
  readonly pid: number;
  /** Start time in clock ticks since boot (field 22 of stat). */
  readonly startTicks: number;
  /** {@link bootId} when the identity was taken. */
  readonly bootId: string;
}

/**
 * The identity of `pid` now, or undefined when it has exited.
 * @throws SystemError when /proc or the boot id cannot be read.
 */
export function identityOf(pid: number): ProcessIdentity | undefined {
  const stat = readProcessStat(pid);
  return stat === undefined ? undefined : { pid, startTicks: stat.startTicks, bootId: bootId() };
}

/**
 * True while the process `identity` names runs: same boot, same pid, same start time, and not
 * a zombie (a zombie holds nothing and never cleans up: for its owner's records it is dead).
 * @throws SystemError when /proc or the boot id cannot be read.
 */
export function isSameProcessAlive(identity: ProcessIdentity): boolean {
  if (identity.bootId !== bootId()) return false;
  const stat = readProcessStat(identity.pid);
  return stat !== undefined && stat.startTicks === identity.startTicks && !isDeadState(stat.state);
}

/**
 * SIGKILL one pid. Returns false when it had already exited (ESRCH). As root with CAP_KILL
 * nothing else can fail, so anything else (EPERM without privilege, EINVAL) is a host fault
 * and throws: swallowing it would report a kill that never happened.
 * @throws SystemError for any error but ESRCH.
 */
export function killPid(pid: number): boolean {
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch (error) {
    if (isErrno(error, 'ESRCH')) return false;
    throw toSystemError(error, `kill -KILL ${pid}`);
  }
}

/**
 * True while `pid` can still run: not exited, not a zombie (unless other threads of it still
 * run). A status that cannot be parsed counts as alive: emptiness is never proven from garbage.
 * @throws SystemError when /proc cannot be read for a reason other than the exit.
 */
export function isProcessLive(pid: number, procRoot = '/proc'): boolean {
  const text = readProcFile(`${procRoot}/${pid}/status`);
  if (text === undefined) return false;
  const status = parseProcessStatus(text);
  if (status === undefined) return true;
  return !isDeadState(status.state) || hasLiveThreads(procRoot, pid);
}

/**
 * True while `pid` can still run user code: it lives ({@link isProcessLive}) and has no
 * SIGKILL pending ({@link isKillPending}).
 */
export function isProcessRunnable(pid: number, procRoot = '/proc'): boolean {
  const text = readProcFile(`${procRoot}/${pid}/status`);
  if (text === undefined) return false;
  const status = parseProcessStatus(text);
  if (status === undefined) return true;
  if (isKillPending(status)) return false;
  return !isDeadState(status.state) || hasLiveThreads(procRoot, pid);
}

/** A live process seen by {@link processesOfUid}. */
export interface UidProcess {
  readonly pid: number;
  /** `Name:` from status (student-controlled). */
  readonly name: string;
  readonly state: string;
  /** In a PID namespace nested below the reader's (`NSpid:` lists more than one pid). */
  readonly nested: boolean;
  /**
   * SIGKILL is pending ({@link isKillPending}): the process is on its way out and never runs
   * user code again, though the kernel may still be tearing it down.
   */
  readonly dying: boolean;
}

/** One walk of /proc by {@link processesOfUid}. */
export interface UidWalk {
  /** Live processes holding the uid as their real, effective, saved or filesystem uid. */
  readonly alive: readonly UidProcess[];
  /**
   * False when the walk could not account for every entry it listed (readdir failed, an entry
   * was unreadable for a reason other than the process having exited, or its status was
   * garbled). An incomplete walk is a lower bound only and never proves emptiness.
   */
  readonly complete: boolean;
  /** Entries listed by readdir that had exited by the time they were read. */
  readonly vanished: number;
  /** Why the walk is incomplete, when it is. */
  readonly problem?: string;
}

function numericEntries(dir: string): string[] {
  return readdirSync(dir).filter((name) => /^[1-9]\d*$/.test(name));
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
    throw toSystemError(error, `readdir ${procRoot}/${pid}/task`);
  }
  for (const tid of tids) {
    if (tid === String(pid)) continue;
    const text = readProcFile(`${procRoot}/${pid}/task/${tid}/stat`);
    if (text === undefined) continue;
    const stat = parseProcessStat(Number(tid), text);
    if (stat === undefined || !isDeadState(stat.state)) return true;
  }
  return false;
}

const NO_PIDS: ReadonlySet<number> = new Set();

/**
 * Walk /proc once and list the live processes of `uid`: those holding it as their real,
 * effective, saved set or filesystem uid. Any of the four is enough to act as the uid (a saved
 * uid can be taken back with setresuid, a filesystem uid opens files as it), so a process with
 * any of them is the uid's, whether it got there through a setuid binary or not.
 *
 * Zombies are not alive (they run nothing); a zombie leader whose other threads run is. An
 * entry that vanished between readdir and the read is a process that exited: not alive, and
 * the walk goes on. Any other failure makes the walk incomplete, never clean.
 *
 * Pids in `skip` are not read (nor listed): the caller knows them already, as the reaper
 * knows the members of a group it holds frozen and killed.
 */
export function processesOfUid(
  uid: number,
  procRoot = '/proc',
  skip: ReadonlySet<number> = NO_PIDS,
): UidWalk {
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
  const alive: UidProcess[] = [];
  let vanished = 0;
  let problem: string | undefined;
  for (const entry of entries) {
    if (skip.size > 0 && skip.has(Number(entry))) continue;
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
    // Most processes are someone else's: a well-formed Uid line without the uid settles it
    // before the whole status is parsed.
    if (uidLineLacks(text, uid)) continue;
    const status = parseProcessStatus(text);
    if (status === undefined) {
      problem ??= `garbled ${procRoot}/${entry}/status`;
      continue;
    }
    if (!status.uids.includes(uid)) continue;
    const pid = Number(entry);
    if (isDeadState(status.state)) {
      try {
        if (!hasLiveThreads(procRoot, pid)) continue;
      } catch (error) {
        problem ??= `cannot read the threads of ${pid}: ${describe(error)}`;
        continue;
      }
    }
    alive.push({
      pid,
      name: status.name,
      state: status.state,
      nested: status.nsPids.length > 1,
      dying: isKillPending(status),
    });
  }
  return problem === undefined
    ? { alive, complete: true, vanished }
    : { alive, complete: false, vanished, problem };
}

/** True when `text` (a status file) has a well-formed Uid line that does not name `uid`. */
function uidLineLacks(text: string, uid: number): boolean {
  const start = text.indexOf('\nUid:');
  if (start < 0) return false;
  const end = text.indexOf('\n', start + 5);
  const fields = text
    .slice(start + 5, end < 0 ? undefined : end)
    .trim()
    .split(/\s+/);
  if (fields.length !== 4 || !fields.every((field) => /^\d+$/.test(field))) return false;
  return !fields.some((field) => Number(field) === uid);
}

function describe(error: unknown): string {
  if (SystemError.isInstance(error)) return error.errno ?? error.message;
  if (isErrno(error)) return error.code;
  return error instanceof Error ? error.message : String(error);
}
