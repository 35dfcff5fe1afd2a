// Unpacking image layers into one directory tree, as root, so that a hostile layer can never
// write outside that tree nor leave anything the student could use to gain a privilege.
//
// The rules, and why:
// - An entry's path is taken relative to the tree: a leading `/` is dropped (as tar does), and
//   a `..` component refuses the layer (there is no honest reason for one).
// - Every directory on the way to an entry is resolved inside the tree, component by
//   component with lstat: a symlink met on the way is followed as if the tree were `/` (an
//   absolute target restarts at the tree, `..` stops at it), at most 40 links. So a layer that
//   plants `evil -> /etc` and then writes `evil/passwd` writes the tree's own `etc/passwd`,
//   never the host's (the technique of umoci's and containerd's unpackers, securejoin).
// - The entry itself is never followed: what is at its place is removed first (a symlink is
//   unlinked, not its target) and files are created O_EXCL, which refuses a symlink too.
// - A hard link's target is resolved the same way and must be a file or symlink already in
//   the tree: a link to a host file is refused.
// - Device nodes and FIFOs are not created (counted in the report): the root is mounted nodev
//   anyway, and an image needs none. setuid and setgid bits are stripped from everything, the
//   sticky bit is kept on directories only. Everything is owned by root.
// - Whiteouts (`.wh.<name>`) remove the lower layers' `<name>`; an opaque marker
//   (`.wh..wh..opq`) removes what lower layers put in its directory (this layer's own entries
//   stay, whichever order the archive has them in).
// - Budgets: entries, bytes of one file and bytes in all are checked from the headers before
//   a byte of a body is written; all-zero blocks of a file are left as holes.
import {
  closeSync,
  fchmodSync,
  ftruncateSync,
  futimesSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  rmSync,
  chmodSync,
  symlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { ImageError } from './errors.js';
import type { TarHeader, TarSink } from './tar.js';

/** Budgets of one image's unpacking. */
export interface UnpackLimits {
  /** Most entries in all layers together. */
  readonly maxEntries: number;
  /** Largest file. */
  readonly maxFileBytes: number;
  /** Bytes of every file of every layer together (holes included). */
  readonly maxTotalBytes: number;
}

/** What an unpacking skipped or changed, for the import report. */
export interface UnpackReport {
  entries: number;
  bytes: number;
  /** Device nodes and FIFOs not created. */
  skippedSpecial: number;
  /** Entries whose setuid or setgid bit was stripped. */
  strippedSetid: number;
}

const MAX_LINKS = 40;
const MAX_DEPTH = 256;
const MAX_PATH_BYTES = 4096;
const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';
const ZERO = Buffer.alloc(64 * 1024);

/** The parts of an entry's path inside the tree; refuses `..`. */
function entryParts(name: string, what = 'path'): string[] {
  if (Buffer.byteLength(name) > MAX_PATH_BYTES) {
    throw new ImageError('LAYER_UNSAFE', `a layer entry's ${what} is longer than ${MAX_PATH_BYTES} bytes`);
  }
  const parts = name.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) {
    throw new ImageError(
      'LAYER_UNSAFE',
      `a layer entry's ${what} ${JSON.stringify(name)} climbs out with "..": refused`,
    );
  }
  if (parts.length > MAX_DEPTH) {
    throw new ImageError(
      'IMAGE_TOO_LARGE',
      `a layer entry's ${what} is deeper than ${MAX_DEPTH} directories`,
    );
  }
  return parts;
}

function lstatOrUndefined(p: string): Stats | undefined {
  return lstatSync(p, { throwIfNoEntry: false });
}

/**
 * The host path of the directory `parts` inside `root`, every component a real directory of
 * the tree: symlinks on the way resolved as if `root` were `/`; missing directories created
 * (0755) when `create`. Returns undefined when a component is missing and `create` is false.
 */
function resolveDirInRoot(root: string, parts: readonly string[], create: boolean): string | undefined {
  const stack: string[] = [];
  const todo = [...parts].reverse();
  let links = 0;
  while (todo.length > 0) {
    const part = todo.pop()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      stack.pop();
      continue;
    }
    const here = path.join(root, ...stack, part);
    const stat = lstatOrUndefined(here);
    if (stat === undefined) {
      if (!create) return undefined;
      mkdirSync(here, { mode: 0o755 });
      chmodSync(here, 0o755);
      stack.push(part);
      continue;
    }
    if (stat.isSymbolicLink()) {
      links += 1;
      if (links > MAX_LINKS)
        throw new ImageError('LAYER_UNSAFE', `too many symlinks on the way to ${parts.join('/')}`);
      const target = readlinkSync(here);
      if (target.startsWith('/')) stack.length = 0;
      for (const next of target.split('/').reverse()) todo.push(next);
      continue;
    }
    if (!stat.isDirectory()) {
      if (!create) return undefined;
      throw new ImageError(
        'LAYER_UNSAFE',
        `a layer entry lies under ${JSON.stringify(parts.join('/'))}, which is not a directory`,
      );
    }
    stack.push(part);
  }
  return path.join(root, ...stack);
}

/** Remove what is at `p` without following it (a directory with everything in it). */
function removeAt(p: string): void {
  rmSync(p, { recursive: true, force: true });
}

/** The file being written. */
interface OpenFile {
  readonly fd: number;
  readonly size: number;
  readonly mtimeSeconds: number;
  position: number;
}

/**
 * Unpacks the layers of one image into `root` (an empty directory of root's), one layer after
 * another: `beginLayer()`, the layer's tar stream into a {@link TarReader} with this as its
 * sink, then `endLayer()`.
 */
export class LayerUnpacker implements TarSink {
  readonly report: UnpackReport = { entries: 0, bytes: 0, skippedSpecial: 0, strippedSetid: 0 };
  /** Host paths this layer made (an opaque marker keeps them). */
  private made = new Set<string>();
  /** Opaque directories of this layer, cleared of lower layers' entries at its end. */
  private opaque = new Set<string>();
  private file: OpenFile | undefined;

  constructor(
    private readonly root: string,
    private readonly limits: UnpackLimits,
  ) {}

  beginLayer(): void {
    this.made = new Set();
    this.opaque = new Set();
  }

  /** Apply the layer's opaque markers (after all its entries, so its own entries stay). */
  endLayer(): void {
    for (const dir of this.opaque) {
      // A later entry of the same layer may have replaced or removed the directory.
      if (lstatOrUndefined(dir)?.isDirectory() !== true) continue;
      for (const name of readdirSync(dir)) {
        const child = path.join(dir, name);
        if (!this.made.has(child)) removeAt(child);
      }
    }
  }

  entry(header: TarHeader): void {
    this.report.entries += 1;
    if (this.report.entries > this.limits.maxEntries) {
      throw new ImageError(
        'IMAGE_TOO_LARGE',
        `the image has more than ${this.limits.maxEntries} entries (a tar bomb?)`,
      );
    }
    const parts = entryParts(header.path);
    if (parts.length === 0) {
      // The tree's root itself (`./`): only its mode applies.
      if (header.type === 'directory') chmodSync(this.root, this.cleanMode(header));
      return;
    }
    const name = parts.at(-1)!;
    const parent = resolveDirInRoot(this.root, parts.slice(0, -1), true)!;
    if (name === OPAQUE) {
      this.opaque.add(parent);
      return;
    }
    if (name.startsWith(WHITEOUT)) {
      const hidden = name.slice(WHITEOUT.length);
      if (hidden === '' || hidden === '.' || hidden === '..') {
        throw new ImageError('LAYER_UNSAFE', `a whiteout ${JSON.stringify(header.path)} names nothing`);
      }
      removeAt(path.join(parent, hidden));
      return;
    }
    const target = path.join(parent, name);
    const existing = lstatOrUndefined(target);
    this.made.add(target);
    // Its directories are this layer's too (an opaque marker of an ancestor keeps them).
    for (let dir = parent; dir.length > this.root.length; dir = path.dirname(dir)) this.made.add(dir);
    switch (header.type) {
      case 'directory': {
        if (existing?.isDirectory() !== true) {
          if (existing !== undefined) removeAt(target);
          mkdirSync(target, { mode: 0o700 });
        }
        chmodSync(target, this.cleanMode(header));
        return;
      }
      case 'file': {
        this.report.bytes += header.size;
        if (this.report.bytes > this.limits.maxTotalBytes) {
          throw new ImageError(
            'IMAGE_TOO_LARGE',
            `the image's files are over the budget of ${this.limits.maxTotalBytes} bytes in all`,
          );
        }
        if (existing !== undefined) removeAt(target);
        // O_EXCL: never through a symlink someone put back in the meantime.
        const fd = openSync(target, 'wx', 0o600);
        fchmodSync(fd, this.cleanMode(header));
        this.file = { fd, size: header.size, mtimeSeconds: header.mtimeSeconds, position: 0 };
        return;
      }
      case 'symlink': {
        if (existing !== undefined) removeAt(target);
        if (header.linkName === '')
          throw new ImageError('LAYER_MALFORMED', `the symlink ${JSON.stringify(header.path)} has no target`);
        symlinkSync(header.linkName, target);
        return;
      }
      case 'hardlink': {
        const linkParts = entryParts(header.linkName, 'hard link target');
        if (linkParts.length === 0)
          throw new ImageError('LAYER_UNSAFE', `the hard link ${JSON.stringify(header.path)} has no target`);
        const linkDir = resolveDirInRoot(this.root, linkParts.slice(0, -1), false);
        const source = linkDir === undefined ? undefined : path.join(linkDir, linkParts.at(-1)!);
        const stat = source === undefined ? undefined : lstatOrUndefined(source);
        if (source === undefined || stat === undefined || !(stat.isFile() || stat.isSymbolicLink())) {
          throw new ImageError(
            'LAYER_UNSAFE',
            `the hard link ${JSON.stringify(header.path)} points to ${JSON.stringify(header.linkName)}, which is not a file of the image: refused`,
          );
        }
        if (source === target) return;
        if (existing !== undefined) removeAt(target);
        linkSync(source, target);
        return;
      }
      case 'char':
      case 'block':
      case 'fifo':
        // Not created: a device in an image would be a door to the host's hardware (the
        // root is nodev anyway), and no program needs a FIFO shipped in its image.
        this.made.delete(target);
        this.report.skippedSpecial += 1;
        return;
    }
  }

  data(chunk: Buffer): void {
    const file = this.file!;
    // All-zero runs stay holes: a sparse giant costs no disk.
    let offset = 0;
    while (offset < chunk.length) {
      const piece = chunk.subarray(offset, offset + ZERO.length);
      if (!(piece.length === ZERO.length && piece.equals(ZERO)))
        writeSync(file.fd, piece, 0, piece.length, file.position);
      file.position += piece.length;
      offset += piece.length;
    }
  }

  endEntry(): void {
    const file = this.file;
    if (file === undefined) return;
    this.file = undefined;
    try {
      ftruncateSync(file.fd, file.size);
      futimesSync(file.fd, file.mtimeSeconds, file.mtimeSeconds);
    } finally {
      closeSync(file.fd);
    }
  }

  /** Close a file left open by a failed layer. */
  abort(): void {
    if (this.file !== undefined) {
      closeSync(this.file.fd);
      this.file = undefined;
    }
  }

  private cleanMode(header: TarHeader): number {
    const setid = header.mode & 0o6000;
    if (setid !== 0) this.report.strippedSetid += 1;
    return header.mode & (header.type === 'directory' ? 0o1777 : 0o777);
  }
}

/**
 * The host path of `target` (absolute, as a process chrooted into `root` names it), every
 * symlink on the way and at its end resolved inside `root`; undefined when it does not exist.
 */
function resolveInRoot(root: string, target: string): string | undefined {
  let parts = target.split('/').filter((part) => part !== '' && part !== '.');
  for (let links = 0; links <= MAX_LINKS; links += 1) {
    if (parts.length === 0) return root;
    const dir = resolveDirInRoot(root, parts.slice(0, -1), false);
    if (dir === undefined) return undefined;
    const name = parts.at(-1)!;
    if (name === '..') return resolveDirInRoot(root, parts, false);
    const here = path.join(dir, name);
    const stat = lstatOrUndefined(here);
    if (stat === undefined) return undefined;
    if (!stat.isSymbolicLink()) return here;
    const link = readlinkSync(here);
    const base = link.startsWith('/')
      ? []
      : path
          .relative(root, dir)
          .split('/')
          .filter((part) => part !== '');
    parts = [...base, ...link.split('/')].filter((part) => part !== '' && part !== '.');
  }
  return undefined;
}

/** True when `target` resolves inside `root` to a regular file anyone may execute. */
export function isExecutableInRoot(root: string, target: string): boolean {
  const at = resolveInRoot(root, target);
  if (at === undefined) return false;
  const stat = lstatOrUndefined(at);
  return stat?.isFile() === true && (stat.mode & 0o001) !== 0;
}
