// The proof that the host is read-only inside a sandbox: after setup, the harness reads the
// namespace's own mount table (/proc/<init>/mountinfo, from outside) and checks every mount a
// path can reach. Nothing the setup script reported is trusted for this.

import { parseMountInfo } from '@karotte/base';
import type { MountInfoEntry } from '@karotte/base';

/**
 * The mounts a path lookup can reach. Path resolution enters, at each directory on the way, a
 * mount attached there to the mount it is currently in (and any mount stacked on top of that);
 * so a mount is reachable only if resolving its own mount point ends on it. A mount under a
 * directory that a later mount covers, or beneath a mount stacked at the same place, is not.
 * Where two mounts share a parent and a mount point (no order is visible), both count as
 * reachable: when in doubt, a mount is checked.
 */
export function reachableMounts(entries: readonly MountInfoEntry[]): MountInfoEntry[] {
  const ids = new Set(entries.map((entry) => entry.id));
  const children = new Map<number, MountInfoEntry[]>();
  for (const entry of entries) {
    const list = children.get(entry.parentId) ?? [];
    list.push(entry);
    children.set(entry.parentId, list);
  }
  // Enter every mount attached at `path` to one of `current`, repeatedly (stacks).
  const enter = (current: readonly MountInfoEntry[], path: string): MountInfoEntry[] => {
    let layer = [...current];
    for (let depth = 0; depth < 64; depth += 1) {
      const next = layer.flatMap((mount) =>
        (children.get(mount.id) ?? []).filter((child) => child.mountPoint === path),
      );
      if (next.length === 0) return layer;
      layer = next;
    }
    return layer;
  };
  const roots = entries.filter((entry) => !ids.has(entry.parentId) || entry.parentId === entry.id);
  const topOf = (path: string): MountInfoEntry[] => {
    let current = enter(roots, '/');
    if (path === '/') return current;
    let prefix = '';
    for (const part of path.split('/').filter(Boolean)) {
      prefix = `${prefix}/${part}`;
      current = enter(current, prefix);
    }
    return current;
  };
  return entries.filter((entry) => {
    const top = topOf(entry.mountPoint);
    return top.includes(entry);
  });
}

/**
 * Every reachable mount must be read-only and nosuid, except the given writable places, which
 * must be nosuid and nodev. Returns one sentence per violation (empty: the host is read-only).
 */
export function mountViolations(text: string, writable: readonly string[]): string[] {
  const { entries, malformed } = parseMountInfo(text);
  const out = malformed.map((line) => `unreadable mount table line: ${line.slice(0, 200)}`);
  if (entries.length === 0) out.push('the mount table is empty');
  for (const mount of reachableMounts(entries)) {
    const has = (option: string): boolean => mount.options.includes(option);
    if (writable.includes(mount.mountPoint)) {
      if (!has('nosuid') || !has('nodev')) {
        out.push(
          `${mount.mountPoint} (${mount.fsType}) is writable without nosuid,nodev: ${mount.options.join(',')}`,
        );
      }
    } else if (!has('ro') || !has('nosuid')) {
      out.push(
        `${mount.mountPoint} (${mount.fsType}) is not read-only and nosuid: ${mount.options.join(',')}`,
      );
    }
  }
  return out;
}
