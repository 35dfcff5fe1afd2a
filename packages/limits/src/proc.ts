// Small readers of /proc used by several modules. All synchronous, bounded and tolerant of
// processes that vanish between a listing and a read.
import fs from 'node:fs';

/** Identity of a process that survives pid reuse: pid + start time (clock ticks) + boot id. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly startTicks: number;
  readonly bootId: string;
}

/** The boot id of the running kernel (changes on every boot). */
function bootId(): string {
  return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
}

/** Start time of `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat), or null when gone. */
function startTicks(pid: number): number | null {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
  const close = stat.lastIndexOf(')');
  if (close < 0) return null;
  const fields = stat.slice(close + 2).split(' ');
  // fields[0] is field 3 (state), so field 22 is fields[19].
  const value = Number(fields[19]);
  return Number.isSafeInteger(value) ? value : null;
}

/** The identity of `pid` now, or null when it is gone. */
export function identityOf(pid: number): ProcessIdentity | null {
  const ticks = startTicks(pid);
  return ticks === null ? null : { pid, startTicks: ticks, bootId: bootId() };
}

/** True while the process recorded in `identity` is alive (same boot, same pid, same start time). */
export function isAlive(identity: ProcessIdentity): boolean {
  if (identity.bootId !== bootId()) return false;
  const ticks = startTicks(identity.pid);
  if (ticks === null) return false;
  if (ticks !== identity.startTicks) return false;
  // A zombie is dead for our purposes: it holds nothing and will never clean up.
  try {
    const status = fs.readFileSync(`/proc/${identity.pid}/status`, 'utf8');
    return !/^State:\s+Z/m.test(status);
  } catch {
    return false;
  }
}

/** Page size of this machine, from the auxiliary vector (AT_PAGESZ), 4096 when unreadable. */
export function pageSize(): number {
  try {
    const auxv = fs.readFileSync('/proc/self/auxv');
    // 64-bit pairs of (type, value); AT_PAGESZ is 6.
    for (let offset = 0; offset + 16 <= auxv.length; offset += 16) {
      const type = auxv.readBigUInt64LE(offset);
      if (type === 6n) return Number(auxv.readBigUInt64LE(offset + 8));
      if (type === 0n) break;
    }
  } catch {
    // fall through
  }
  return 4096;
}

/** Physical memory of the host (MemTotal), in bytes. */
export function hostMemoryBytes(): number {
  const meminfo = fs.readFileSync('/proc/meminfo', 'utf8');
  const kib = /^MemTotal:\s+(\d+)\s+kB/m.exec(meminfo)?.[1];
  if (kib === undefined) return 0;
  return Number(kib) * 1024;
}

/** True when the host has active swap (a memory limit then also needs a swap limit). */
export function swapActive(): boolean {
  try {
    const lines = fs.readFileSync('/proc/swaps', 'utf8').trim().split('\n');
    return lines.length > 1;
  } catch {
    return false;
  }
}

/** Numeric entries of /proc (pids), without following anything. */
export function listPids(): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (name.length > 0 && name.length < 12 && /^\d+$/.test(name)) out.push(Number(name));
  }
  return out;
}

/** Real uid of `pid` and whether it is a zombie, or null when it is gone. */
export function realUidOf(pid: number): { uid: number; zombie: boolean } | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    if (uid === undefined) return null;
    return { uid: Number(uid), zombie: /^State:\s+Z/m.test(status) };
  } catch {
    return null;
  }
}

/** Send SIGKILL to `pid`; true when delivered, false when it was already gone. */
export function killPid(pid: number): boolean {
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}
