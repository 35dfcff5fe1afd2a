// The proof that the host is read-only inside a sandbox: after setup, the harness reads the
// namespace's own mount table (/proc/<init>/mountinfo, from outside) and checks every mount a
// path can reach. Nothing the setup script reported is trusted for this.

/** One line of /proc/<pid>/mountinfo. */
export interface MountEntry {
  readonly id: number;
  readonly parentId: number;
  /** Mount point, unescaped (`\040` → space). */
  readonly mountPoint: string;
  /** Per-mount options (`ro,nosuid,nodev,relatime`). */
  readonly options: readonly string[];
  readonly fsType: string;
  readonly source: string;
}

function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** Parse mountinfo text; malformed lines are returned in `malformed` (never skipped silently). */
export function parseMountInfo(text: string): { entries: MountEntry[]; malformed: string[] } {
  const entries: MountEntry[] = [];
  const malformed: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const fields = line.split(' ');
    const separator = fields.indexOf('-', 6);
    const id = Number(fields[0]);
    const parentId = Number(fields[1]);
    if (
      separator < 0 ||
      !Number.isInteger(id) ||
      !Number.isInteger(parentId) ||
      fields.length < separator + 3
    ) {
      malformed.push(line);
      continue;
    }
    entries.push({
      id,
      parentId,
      mountPoint: unescape(fields[4]!),
      options: fields[5]!.split(','),
      fsType: fields[separator + 1]!,
      source: unescape(fields[separator + 2]!),
    });
  }
  return { entries, malformed };
}

/**
 * The mounts a path lookup can reach. Path resolution enters, at each directory on the way, a
 * mount attached there to the mount it is currently in (and any mount stacked on top of that);
 * so a mount is reachable only if resolving its own mount point ends on it. A mount under a
 * directory that a later mount covers, or beneath a mount stacked at the same place, is not.
 * Where two mounts share a parent and a mount point (no order is visible), both count as
 * reachable: when in doubt, a mount is checked.
 */
export function reachableMounts(entries: readonly MountEntry[]): MountEntry[] {
  const ids = new Set(entries.map((entry) => entry.id));
  const children = new Map<number, MountEntry[]>();
  for (const entry of entries) {
    const list = children.get(entry.parentId) ?? [];
    list.push(entry);
    children.set(entry.parentId, list);
  }
  // Enter every mount attached at `path` to one of `current`, repeatedly (stacks).
  const enter = (current: readonly MountEntry[], path: string): MountEntry[] => {
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
  const topOf = (path: string): MountEntry[] => {
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
