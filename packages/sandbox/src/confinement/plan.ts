// The mount plan of a confined world: what the setup program (programs/setup.sh) is told to
// mount, in the one order that makes it sound, and which mounts may stay writable (the proof
// in mounts.ts checks exactly those). The student's sandbox and the grader's both build
// their worlds from a plan made here.
import { statSync, type Dirent, readdirSync } from 'node:fs';
import path from 'node:path';
import { SandboxError } from '../errors.js';

/** Karotte state directories covered inside every sandbox (besides the caller's hiddenPaths). */
export const ALWAYS_COVERED: readonly string[] = Object.freeze(['/root', '/run/karotte', '/var/lib/karotte']);

/**
 * Top-level host entries a student sees with `hostView: 'system'`: programs, libraries and
 * their configuration and data (`/dev`, `/proc`, `/sys`, `/tmp` and `/home` are the
 * sandbox's own). Every other top-level entry is covered.
 */
export const SYSTEM_ROOTS: readonly string[] = Object.freeze([
  'bin',
  'dev',
  'etc',
  'home',
  'lib',
  'lib32',
  'lib64',
  'libx32',
  'opt',
  'proc',
  'run',
  'sbin',
  'sys',
  'tmp',
  'usr',
  'var',
]);

/**
 * What `hostView` covers: the top-level directories outside SYSTEM_ROOTS, and /var/tmp.
 * Real directories only: a top-level symlink leads into a directory that is covered itself
 * (or into a system one, which stays visible), and files directly at `/` (a swap file, a
 * container marker) are not covered.
 */
export function hostViewHidden(view: 'system' | 'all', root = '/'): string[] {
  if (view === 'all') return [];
  let entries: Dirent[];
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch (error) {
    throw new SandboxError('SETUP_FAILED', `cannot list ${root}`, { cause: error });
  }
  return [
    ...entries
      .filter((entry) => entry.isDirectory() && !SYSTEM_ROOTS.includes(entry.name))
      .map((entry) => path.join(root, entry.name)),
    path.join(root, 'var', 'tmp'),
  ];
}

/** A private tmpfs of the world: writable, nosuid and nodev, its pages charged to the world's memory cgroup. */
export interface TmpfsMount {
  readonly path: string;
  readonly sizeBytes: number;
  /** Octal mode of its root, e.g. `1777` for a scratch place, `0700` for a private home. */
  readonly mode: string;
  /** Owner of its root (root when absent). */
  readonly uid?: number;
  readonly gid?: number;
}

/** A host path bound into the world. */
export interface BindMount {
  readonly source: string;
  readonly target: string;
  /** Writable binds are nosuid,nodev; read-only ones are ro,nosuid,nodev (and noexec when asked). */
  readonly writable: boolean;
  readonly noexec?: boolean;
  /**
   * Device nodes work through it (no nodev): only for a read-only bind of the world's own /dev
   * into an image's root (that /dev holds only the devices programs need).
   */
  readonly devices?: boolean;
}

/** What a world's file system looks like. */
export interface MountSpec {
  /** The UTS hostname. */
  readonly hostname: string;
  /** Bring the loopback interface of the new network namespace up. */
  readonly loopback: boolean;
  readonly tmpfs: readonly TmpfsMount[];
  /**
   * Binds made before the world's own /dev and tmpfs mounts (whose sources those would hide:
   * an image's tree kept under /tmp). @default []
   */
  readonly earlyBinds?: readonly BindMount[];
  readonly binds: readonly BindMount[];
  /**
   * The world's own /dev instead of the host's: only the devices programs need, and a private
   * devpts instance holding at most `maxPtys` ptys (the host's ptys stay the host's).
   */
  readonly dev?: { readonly maxPtys: number };
  /** Host mounts that stay writable as they are (they must already be nosuid,nodev): none by default. */
  readonly keepWritable?: readonly string[];
  /**
   * Host paths hidden: a directory under an empty, read-only, root-only tmpfs, anything else
   * under a read-only bind of `emptyFile`. A cover at a path the plan mounts itself is dropped.
   */
  readonly covers: readonly string[];
  /** An empty, root-owned file (mode 000) for the covers of non-directories. */
  readonly emptyFile: string;
}

/** The setup program's directives and the mount points the proof lets stay writable. */
export interface MountPlan {
  readonly directives: readonly string[];
  readonly writable: readonly string[];
}

/**
 * Directives of the root setup (see SETUP_SCRIPT), in the order that makes them sound: the
 * sweep first (every host mount read-only and nosuid), skipping what the plan mounts over
 * (what lies beneath is then unreachable); /proc (the PID namespace's own) read-only and a
 * fresh read-only sysfs of the new network namespace over /sys (one mount instead of one
 * remount per cgroup and other mount below it); then the tmpfs mounts, the binds, and the
 * covers. Files are covered before directories (a file cover binds `emptyFile`, which a
 * directory cover could make unreachable), directories sorted so a parent comes first.
 */
export function planMounts(spec: MountSpec): MountPlan {
  const early = spec.earlyBinds ?? [];
  const allBinds = [...early, ...spec.binds];
  const mounted = [...spec.tmpfs.map((m) => m.path), ...allBinds.map((b) => b.target)];
  const keep = spec.keepWritable ?? [];
  const isDirectory = (p: string): boolean => statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;
  const candidates = [...new Set(spec.covers)].filter(
    (cover) => !mounted.includes(cover) && !keep.includes(cover),
  );
  const covers = [
    ...candidates.filter((c) => !isDirectory(c)).sort(),
    ...candidates.filter(isDirectory).sort(),
  ];
  const replaced = [
    ...new Set(['/proc', '/sys', ...(spec.dev === undefined ? [] : ['/dev']), ...mounted, ...keep]),
  ];
  const d: string[] = [];
  if (spec.loopback) d.push('lo');
  d.push('hostname', spec.hostname);
  d.push('sweep', String(replaced.length + covers.length), ...replaced, ...covers);
  d.push('remount', '/proc', 'ro,nosuid,nodev,noexec');
  d.push('sysfs', '/sys');
  const bind = (b: BindMount): void => {
    d.push(
      'bind',
      b.source,
      b.target,
      `${b.writable ? '' : 'ro,'}nosuid${b.devices === true && !b.writable ? '' : ',nodev'}${b.noexec === true ? ',noexec' : ''}`,
    );
  };
  for (const b of early) bind(b);
  if (spec.dev !== undefined) {
    // Populated, then read-only: nothing can be added to it (its tmpfs and devpts are
    // mounted over and under it before the remount).
    d.push('dev', '/dev', String(spec.dev.maxPtys));
    d.push('remount', '/dev', 'ro,nosuid,noexec');
  }
  for (const m of spec.tmpfs) {
    const owner = m.uid === undefined ? '' : `,uid=${m.uid},gid=${m.gid ?? m.uid}`;
    d.push('tmpfs', m.path, `size=${m.sizeBytes},mode=${m.mode}${owner},nosuid,nodev`);
  }
  for (const b of spec.binds) bind(b);
  for (const cover of covers) d.push('cover', cover, spec.emptyFile);
  return {
    directives: d,
    writable: [
      ...spec.tmpfs.map((m) => m.path),
      ...allBinds.filter((b) => b.writable).map((b) => b.target),
      ...keep,
    ],
  };
}

/**
 * Where an image's tree is mounted inside a world whose student runs in an image: outside
 * every covered directory (the student reaches it only through its chroot). An empty
 * root-owned directory of the host, the same for every world (each mounts in its own mount
 * namespace).
 */
export const IMAGE_ROOT = '/run/karotte-image-root';

/**
 * The binds that make an image's unpacked tree the student's root: the tree read-only at
 * {@link IMAGE_ROOT} (early: before the world's /tmp hides a tree kept there), then the world's own /proc, /sys, /dev (its devices work there, read-only
 * as in the world), its devpts, and its writable /dev/shm and /tmp bound at the same places
 * inside, then `inside` (each target a path inside the image: the home, passwd, group).
 * The image's mount points must be real directories and files (`importImage` makes them).
 */
export function imageBinds(
  rootfs: string,
  inside: readonly BindMount[],
  options: { readonly dev: boolean },
): { readonly earlyBinds: BindMount[]; readonly binds: BindMount[] } {
  const at = (target: string): string => path.join(IMAGE_ROOT, target);
  return {
    earlyBinds: [{ source: rootfs, target: IMAGE_ROOT, writable: false }],
    binds: [
      { source: '/proc', target: at('/proc'), writable: false, noexec: true },
      { source: '/sys', target: at('/sys'), writable: false, noexec: true },
      ...(options.dev
        ? [
            { source: '/dev', target: at('/dev'), writable: false, noexec: true, devices: true },
            { source: '/dev/pts', target: at('/dev/pts'), writable: false, noexec: true, devices: true },
            { source: '/dev/shm', target: at('/dev/shm'), writable: true },
          ]
        : []),
      { source: '/tmp', target: at('/tmp'), writable: true },
      ...inside.map((bind) => ({ ...bind, target: at(bind.target) })),
    ],
  };
}
