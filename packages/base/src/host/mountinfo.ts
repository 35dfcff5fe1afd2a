/** One line of `/proc/<pid>/mountinfo` (proc(5)), its paths decoded. */
export interface MountInfoEntry {
  /** Mount id (field 1), unique within the mount namespace. */
  readonly id: number;
  /** Id of the parent mount (field 2); the root of the namespace is its own parent or has none listed. */
  readonly parentId: number;
  /** The directory of the filesystem that forms this mount's root (field 4: a bind mount's source). */
  readonly root: string;
  /** Where it is mounted (field 5), relative to the reading process's root. */
  readonly mountPoint: string;
  /** Per-mount options (field 6: `ro,nosuid,nodev,relatime`). */
  readonly options: readonly string[];
  /** `ro` is among the per-mount options. */
  readonly readOnly: boolean;
  /** Filesystem type after the separator (`tmpfs`, `cgroup2`, `ext4`). */
  readonly fsType: string;
  /** Mount source after the separator (`/dev/loop0`, `tmpfs`). */
  readonly source: string;
  /** Per-superblock options after the separator (`rw,size=65536k`). */
  readonly superOptions: readonly string[];
}

/** What {@link parseMountInfo} returns: the entries, and every line it could not read. */
export interface MountInfo {
  readonly entries: readonly MountInfoEntry[];
  /** Lines that are not mountinfo lines, verbatim: a caller proving something must not skip them. */
  readonly malformed: readonly string[];
}

/**
 * The kernel writes space, tab, newline and backslash in mountinfo paths as 3-digit octal
 * escapes (`\040`, `\011`, `\012`, `\134`; `seq_path` with `" \t\n\\"`), so that fields stay
 * space-separated and lines newline-separated. Every path field must be decoded, or a mount
 * point with a space (`/mnt/a b`) never compares equal to the real path.
 */
function decodeMountInfoField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_match, octal: string) =>
    String.fromCharCode(Number.parseInt(octal, 8)),
  );
}

/**
 * Parse `/proc/<pid>/mountinfo` text.
 *
 * Why split on spaces and look for a lone `-`: fields 1-6 are fixed, then come zero or more
 * optional fields (`shared:3`, `master:1`), then a `-` field, then type, source and
 * superblock options. A path can never contain a bare space (it is escaped as `\040`), so
 * splitting on spaces is exact and the first lone `-` from field 7 on is the separator. A line
 * that does not have this shape is kept in `malformed`, never dropped silently.
 */
export function parseMountInfo(text: string): MountInfo {
  const entries: MountInfoEntry[] = [];
  const malformed: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const fields = line.split(' ');
    const separator = fields.indexOf('-', 6);
    const id = Number(fields[0]);
    const parentId = Number(fields[1]);
    if (
      separator < 0 ||
      fields.length < separator + 3 ||
      fields[0] === '' ||
      fields[1] === '' ||
      !Number.isInteger(id) ||
      !Number.isInteger(parentId)
    ) {
      malformed.push(line);
      continue;
    }
    const options = fields[5]!.split(',');
    entries.push({
      id,
      parentId,
      root: decodeMountInfoField(fields[3]!),
      mountPoint: decodeMountInfoField(fields[4]!),
      options,
      readOnly: options.includes('ro'),
      fsType: fields[separator + 1]!,
      source: decodeMountInfoField(fields[separator + 2]!),
      superOptions: (fields[separator + 3] ?? '').split(',').filter((option) => option !== ''),
    });
  }
  return { entries, malformed };
}
