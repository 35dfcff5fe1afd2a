import { constants } from 'node:fs';
import {
  chmod,
  chown,
  copyFile,
  lchown,
  lstat,
  mkdir,
  readdir,
  readlink,
  stat,
  symlink,
} from 'node:fs/promises';

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
}

export type CopyTreeResult = { ok: true; entries: number; bytes: number } | { ok: false; message: string };

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
 * created exclusively (COPYFILE_EXCL, mkdir) in a destination only root can write, then given
 * the grader's group so it can read them but not change them.
 */
export async function copyTree(
  source: string,
  destination: string,
  options: CopyTreeOptions,
): Promise<CopyTreeResult> {
  let entries = 0;
  let bytes = 0;
  const walk = async (from: Buffer, to: Buffer, depth: number): Promise<string | undefined> => {
    // Bounded by PATH_MAX long before this; the cap only keeps recursion finite on a bad tree.
    if (depth > 2048) return 'nested deeper than 2048';
    await mkdir(to, { mode: 0o700 });
    const names = await readdir(from, { encoding: 'buffer' });
    for (const name of names) {
      entries += 1;
      if (entries > options.maxEntries) return `more than ${options.maxEntries} entries`;
      const src = join(from, name);
      const dst = join(to, name);
      const stats = await lstat(src);
      if (stats.isDirectory()) {
        const problem = await walk(src, dst, depth + 1);
        if (problem !== undefined) return problem;
      } else if (stats.isFile()) {
        await copyFile(src, dst, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
        await chown(dst, options.uid, options.gid);
        await chmod(dst, options.fileMode);
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
  return problem === undefined ? { ok: true, entries, bytes } : { ok: false, message: problem };
}
