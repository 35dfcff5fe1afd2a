import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { isErrno, toSystemError } from '../errors.js';

/** Why a bounded read refused a file. */
export type BoundedReadRefusal = 'missing' | 'symlink' | 'not_regular' | 'too_large' | 'unreadable';

export type BoundedReadResult =
  { ok: true; bytes: Buffer } | { ok: false; refusal: BoundedReadRefusal; message: string; size?: number };

/**
 * Read at most `maxBytes` from the regular file at `filePath`, refusing anything else.
 *
 * Open flags, and why: O_NOFOLLOW so a final-component symlink fails (ELOOP) instead of
 * reading its target; O_NONBLOCK so opening a FIFO returns at once instead of waiting for a
 * writer; O_NOCTTY so a terminal never becomes our controlling tty. The opened fd is fstat'ed
 * (not the path, which could be swapped after the open) and must be a regular file whose size
 * is within the bound; the read stops at `maxBytes + 1` even if the file grows meanwhile.
 *
 * A host fault (EIO, EMFILE, ...) throws a SystemError; everything a writer of the file could
 * provoke is a refusal.
 */
export async function readBounded(filePath: string, maxBytes: number): Promise<BoundedReadResult> {
  let handle: FileHandle;
  try {
    handle = await open(
      filePath,
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY,
    );
  } catch (error) {
    if (isErrno(error, 'ENOENT', 'ENOTDIR'))
      return { ok: false, refusal: 'missing', message: 'no such file' };
    if (isErrno(error, 'ELOOP')) return { ok: false, refusal: 'symlink', message: 'is a symbolic link' };
    if (isErrno(error, 'EACCES', 'EPERM', 'ENXIO', 'EWOULDBLOCK', 'EAGAIN', 'ETXTBSY')) {
      return { ok: false, refusal: 'unreadable', message: `cannot open (${error.code})` };
    }
    throw toSystemError(error, `open ${filePath}`);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return { ok: false, refusal: 'not_regular', message: 'is not a regular file' };
    if (stats.size > maxBytes) {
      return {
        ok: false,
        refusal: 'too_large',
        message: `is ${stats.size} bytes, over the ${maxBytes}-byte bound`,
        size: stats.size,
      };
    }
    // Sized by the file (a bound of 64 MiB must not cost 64 MiB for a 1 KiB file), grown while
    // a file that grows is read, never past maxBytes + 1 (one byte more proves it too large).
    let buffer = Buffer.alloc(Math.min(stats.size, maxBytes) + 1);
    let filled = 0;
    for (;;) {
      if (filled === buffer.length) {
        if (buffer.length > maxBytes) break;
        const grown = Buffer.alloc(Math.min(buffer.length * 2, maxBytes + 1));
        buffer.copy(grown, 0, 0, filled);
        buffer = grown;
      }
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    if (filled > maxBytes) {
      return { ok: false, refusal: 'too_large', message: `grew past the ${maxBytes}-byte bound while read` };
    }
    return { ok: true, bytes: buffer.subarray(0, filled) };
  } catch (error) {
    if (isErrno(error, 'EISDIR', 'EAGAIN', 'EWOULDBLOCK')) {
      return { ok: false, refusal: 'unreadable', message: `cannot read (${error.code})` };
    }
    throw toSystemError(error, `read ${filePath}`);
  } finally {
    await handle.close();
  }
}
