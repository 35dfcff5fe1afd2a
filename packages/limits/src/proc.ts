// Host memory facts only limits needs (page size, MemTotal, swap). Processes, identities and
// kills are @karotte/base's (identityOf, isSameProcessAlive, killPid, processesOfUid).
import fs from 'node:fs';

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

/**
 * True when the kernel was booted with `cgroup.memory=nosocket`: socket buffers are then
 * charged to no memory cgroup, on v1 and v2 alike. An unreadable /proc/cmdline reads as false.
 */
export function socketAccountingDisabled(): boolean {
  let cmdline: string;
  try {
    cmdline = fs.readFileSync('/proc/cmdline', 'utf8');
  } catch {
    return false;
  }
  return cmdline
    .split(/\s+/)
    .filter((word) => word.startsWith('cgroup.memory='))
    .some((word) => word.slice('cgroup.memory='.length).split(',').includes('nosocket'));
}
