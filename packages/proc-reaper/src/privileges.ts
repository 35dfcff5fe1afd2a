// What the confirmed tier needs from the caller: root with CAP_KILL, CAP_SETUID and
// CAP_SETGID, and the student's uid and gid mapped in the caller's user namespace.
import { readFileSync } from 'node:fs';
import { ProcReaperError } from './errors.js';

const CAP_KILL = 5n;
const CAP_SETGID = 6n;
const CAP_SETUID = 7n;

/** Effective capability mask of this process (`CapEff:` of /proc/self/status). */
function effectiveCapabilities(procRoot = '/proc'): bigint {
  const status = readFileSync(`${procRoot}/self/status`, 'latin1');
  const hex = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
  return hex === undefined ? 0n : BigInt(`0x${hex}`);
}

/** True when `id` falls in one of the ranges of a uid_map/gid_map (`inside outside count`). */
function isMapped(map: string, id: number): boolean {
  for (const line of map.split('\n')) {
    const [inside, , length] = line.trim().split(/\s+/).map(Number);
    if (inside === undefined || length === undefined || Number.isNaN(inside) || Number.isNaN(length))
      continue;
    if (id >= inside && id < inside + length) return true;
  }
  return false;
}

/**
 * Throw `NOT_PRIVILEGED` unless this process can reap `uid`: euid 0, CAP_KILL (signal any
 * process), CAP_SETUID and CAP_SETGID (the helper becomes the uid), and `uid`/`gid` mapped
 * in this user namespace (otherwise the helper could never become them).
 */
export function assertCanReap(uid: number | undefined, gid: number | undefined, procRoot = '/proc'): void {
  const euid = process.geteuid?.();
  if (euid !== 0) {
    throw new ProcReaperError(
      'NOT_PRIVILEGED',
      `reap() needs root: this process runs as euid ${euid ?? 'unknown'}. Without root nothing can be confirmed; ` +
        'use reapBestEffort() and treat its record as unconfirmed',
    );
  }
  const caps = effectiveCapabilities(procRoot);
  const missing = (
    [
      ['CAP_KILL', CAP_KILL],
      ['CAP_SETUID', CAP_SETUID],
      ['CAP_SETGID', CAP_SETGID],
    ] as const
  )
    .filter(([, bit]) => (caps & (1n << bit)) === 0n)
    .map(([name]) => name);
  if (missing.length > 0) {
    throw new ProcReaperError('NOT_PRIVILEGED', `reap() needs ${missing.join(', ')} in the effective set`);
  }
  if (uid !== undefined && !isMapped(readFileSync(`${procRoot}/self/uid_map`, 'latin1'), uid)) {
    throw new ProcReaperError('NOT_PRIVILEGED', `uid ${uid} is not mapped in this user namespace`);
  }
  if (gid !== undefined && !isMapped(readFileSync(`${procRoot}/self/gid_map`, 'latin1'), gid)) {
    throw new ProcReaperError('NOT_PRIVILEGED', `gid ${gid} is not mapped in this user namespace`);
  }
}
