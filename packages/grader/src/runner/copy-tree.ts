import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import {
  chmod,
  chown,
  copyFile,
  lchown,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  stat,
  symlink,
} from 'node:fs/promises';
import { BadArgumentError, KiB, SystemError, resolveTrustedBinary } from '@karotte/base';

export interface CopyTreeOptions {
  /** Owner of every copy (files and directories). */
  readonly uid: number;
  /** Group of every copy: the grader's gid, so the grader reads but does not own them. */
  readonly gid: number;
  /** Mode of copied directories. */
  readonly dirMode: number;
  /** Mode of copied files. */
  readonly fileMode: number;
  /** Most entries copied before giving up. */
  readonly maxEntries: number;
  /**
   * Most bytes the copies may allocate on disk, summed (`st_blocks` × 512): the disk quota the
   * student had, for a copy of student data. A budget on what the copy costs the host, never
   * on apparent sizes: a 10 GiB file with three data blocks costs 12 KiB. A tree that would
   * pass it is refused before the file that would pass it is copied.
   * @default unbounded (every copy still allocates at most what its source does, plus slack)
   */
  readonly maxAllocatedBytes?: number;
  /**
   * Keep the execute bits of files (`fileMode` plus user and group execute where the source
   * had any): for a task directory whose scripts a grader command runs.
   * @default false
   */
  readonly keepExecutable?: boolean;
  /** Names left out at the top of the tree (`student`, `hidden` of a task directory). @default [] */
  readonly excludeTopLevel?: readonly string[];
  /**
   * The destination is an empty, root-owned directory the caller made (a prepared grading
   * run's): it is filled, not created. Anything else there is refused.
   * @default false
   */
  readonly intoEmptyDirectory?: boolean;
}

export type CopyTreeResult =
  | {
      ok: true;
      entries: number;
      /** Apparent bytes copied (`st_size`, holes included). */
      bytes: number;
      /** Bytes the copies allocate on disk (`st_blocks` × 512). */
      allocatedBytes: number;
    }
  | { ok: false; message: string };

/**
 * What one copy may allocate beyond its source's allocation: file systems differ in block
 * size and in the extent-tree blocks they count in `st_blocks`. Past it, the destination
 * wrote holes dense.
 */
function slackOf(sourceAllocated: number): number {
  return Math.max(64 * KiB, Math.ceil(sourceAllocated / 8));
}

/** How long `cp` may take for one sparse file (it reads only the data: SEEK_DATA/SEEK_HOLE). */
const SPARSE_COPY_TIMEOUT_MS = 600_000;

/** Bytes of `cp`'s stderr kept for an error message. */
const STDERR_CAP = 4 * KiB;

const SLASH = Buffer.from('/');

/** `dir/name` on raw bytes: names are never decoded, so invalid UTF-8 survives the copy. */
function join(dir: Buffer, name: Buffer): Buffer {
  return Buffer.concat([dir, SLASH, name]);
}

/**
 * Copy a trusted, root-owned tree (a custody directory, hidden data) into the grader's private
 * directory, never following a link: entries are lstat'ed; regular files and directories are
 * copied, symbolic links are recreated as links (never followed), anything else is refused.
 * Names are handled as raw bytes (a student's file name need not be valid UTF-8). Copies are
 * created exclusively (COPYFILE_EXCL, O_EXCL, mkdir) in a destination only root can write,
 * then given the grader's group so it can read them but not change them.
 *
 * Holes stay holes: a file that allocates less than its size (custody keeps the student's
 * holes) is copied by the trusted `cp --sparse=always`, which walks the data with
 * SEEK_DATA/SEEK_HOLE (Node.js has no such call, and copyFile writes holes dense on ext4), so
 * the work and the disk follow the data, not the apparent size. Every copy's `st_blocks` is
 * checked against its source's, and the sum against `maxAllocatedBytes`.
 *
 * @throws BadArgumentError when `maxAllocatedBytes` is not a non-negative integer;
 *   SystemError when `cp` fails; errno errors of the file system.
 */
export async function copyTree(
  source: string,
  destination: string,
  options: CopyTreeOptions,
): Promise<CopyTreeResult> {
  const budget = options.maxAllocatedBytes;
  if (budget !== undefined && (!Number.isSafeInteger(budget) || budget < 0)) {
    throw new BadArgumentError(`maxAllocatedBytes must be a non-negative integer, got ${budget}`, {
      field: 'maxAllocatedBytes',
    });
  }
  let entries = 0;
  let bytes = 0;
  let allocatedBytes = 0;
  let cp: string | undefined;
  const walk = async (from: Buffer, to: Buffer, depth: number): Promise<string | undefined> => {
    // Bounded by PATH_MAX long before this; the cap only keeps recursion finite on a bad tree.
    if (depth > 2048) return 'nested deeper than 2048';
    if (depth === 0 && options.intoEmptyDirectory === true) {
      const made = await lstat(to);
      if (!made.isDirectory() || made.uid !== 0 || (await readdir(to)).length > 0) {
        return `${to.toString('utf8')} is not an empty root-owned directory`;
      }
    } else await mkdir(to, { mode: 0o700 });
    const names = await readdir(from, { encoding: 'buffer' });
    for (const name of names) {
      if (depth === 0 && options.excludeTopLevel?.includes(name.toString('utf8')) === true) continue;
      entries += 1;
      if (entries > options.maxEntries) return `more than ${options.maxEntries} entries`;
      const src = join(from, name);
      const dst = join(to, name);
      const stats = await lstat(src);
      if (stats.isDirectory()) {
        const problem = await walk(src, dst, depth + 1);
        if (problem !== undefined) return problem;
      } else if (stats.isFile()) {
        const sourceAllocated = stats.blocks * 512;
        if (budget !== undefined && allocatedBytes + sourceAllocated > budget) {
          return `the tree allocates more than ${budget} bytes on disk`;
        }
        if (sourceAllocated < stats.size) {
          cp ??= resolveTrustedBinary('cp');
          await copySparse(cp, src, dst);
        } else {
          // Dense (every byte allocated): nothing to keep; FICLONE shares the blocks where it can.
          await copyFile(src, dst, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
        }
        await chown(dst, options.uid, options.gid);
        await chmod(
          dst,
          options.keepExecutable === true && (stats.mode & 0o111) !== 0
            ? options.fileMode | 0o110
            : options.fileMode,
        );
        const copyAllocated = (await lstat(dst)).blocks * 512;
        if (copyAllocated > sourceAllocated + slackOf(sourceAllocated)) {
          return `a copy allocates ${copyAllocated} bytes where its source allocates ${sourceAllocated}: the destination does not keep holes`;
        }
        allocatedBytes += copyAllocated;
        if (budget !== undefined && allocatedBytes > budget) {
          return `the tree allocates more than ${budget} bytes on disk`;
        }
        bytes += stats.size;
      } else if (stats.isSymbolicLink()) {
        // Custody recreates inner links only when a task allows them. The copy keeps the link
        // text and never follows it: the grader resolves it as its own unprivileged uid.
        await symlink(await readlink(src, { encoding: 'buffer' }), dst);
        await lchown(dst, options.uid, options.gid);
      } else {
        return `an entry is not a regular file, directory or symbolic link`;
      }
    }
    await chown(to, options.uid, options.gid);
    await chmod(to, options.dirMode);
    return undefined;
  };
  // The root itself may be reached through a link the task author made; nothing below it is followed.
  const root = await stat(source);
  if (!root.isDirectory()) return { ok: false, message: `${source} is not a directory` };
  const problem = await walk(Buffer.from(source), Buffer.from(destination), 0);
  return problem === undefined
    ? { ok: true, entries, bytes, allocatedBytes }
    : { ok: false, message: problem };
}

/**
 * Copy the sparse file `src` to a new file `dst` with `cp --sparse=always`: it reads only the
 * data extents (SEEK_DATA/SEEK_HOLE) and writes zero blocks as holes. Both ends are opened
 * here and handed over as descriptors (`/proc/self/fd/3` and `4`): a name is raw bytes that an
 * argv string could not carry, the source is opened without following a link, and the
 * destination is created exclusively.
 */
async function copySparse(cp: string, src: Buffer, dst: Buffer): Promise<void> {
  const source = await open(src, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const target = await open(
      dst,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      await runCp(cp, source.fd, target.fd);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

function runCp(cp: string, sourceFd: number, targetFd: number): Promise<void> {
  const args = ['--sparse=always', '--', '/proc/self/fd/3', '/proc/self/fd/4'];
  return new Promise((resolve, reject) => {
    const child = spawn(cp, args, {
      stdio: ['ignore', 'ignore', 'pipe', sourceFd, targetFd],
      env: {},
      timeout: SPARSE_COPY_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      if (stderr.length < STDERR_CAP) stderr += chunk.slice(0, STDERR_CAP - stderr.length);
    });
    child.once('error', (error) => {
      reject(new SystemError(`cannot run ${cp}: ${error.message}`, { cause: error }));
    });
    child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else {
        const how = signal === null ? `exited ${String(code)}` : `was killed by ${signal}`;
        reject(new SystemError(`${cp} ${args.join(' ')} ${how}: ${stderr.trim()}`));
      }
    });
  });
}
