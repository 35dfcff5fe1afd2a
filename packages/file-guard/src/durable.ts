// Durable writes for transcripts and results: the bytes are on disk, and so is the
// directory entry that names them, before the promise resolves.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { BadArgumentError, parseOptions, toSystemError } from '@karotte/base';
import { absolutePathSchema, durableLogOptionsSchema, writeDurablyOptionsSchema } from './options.js';
import type { DurableLogOptions, WriteDurablyOptions } from './options.js';

const { O_WRONLY, O_CREAT, O_EXCL, O_APPEND, O_NOFOLLOW } = fs.constants;

async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await fsp.open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** mkdir -p with 0700, fsyncing each new directory into its parent. */
async function createParents(dir: string): Promise<void> {
  const missing: string[] = [];
  let current = dir;
  for (;;) {
    try {
      // The harness's own path: a parent may be a link (/var/run -> /run); only the file
      // itself is never followed.
      const stats = await fsp.stat(current);
      if (!stats.isDirectory()) {
        throw new BadArgumentError(`${current} exists and is not a directory`, { field: 'path' });
      }
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') throw error;
      missing.push(current);
      const parent = path.dirname(current);
      if (parent === current) break;
      current = parent;
    }
  }
  for (const created of missing.reverse()) {
    try {
      await fsp.mkdir(created, { mode: 0o700 });
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error;
    }
    await fsyncDirectory(path.dirname(created));
  }
}

function validatePath(file: string): string {
  const result = absolutePathSchema.safeParse(file);
  if (!result.success || file === '/') {
    throw new BadArgumentError(
      `path must be an absolute, normalized file path, got ${JSON.stringify(file)}`,
      {
        field: 'path',
      },
    );
  }
  return file;
}

/**
 * Write `data` to `path` durably and atomically: a fresh temporary file in the same
 * directory (O_CREAT|O_EXCL|O_NOFOLLOW, `mode`), write, fsync, rename over `path`, fsync the
 * directory. A crash leaves either the old file or the new one, never a torn one. A
 * symbolic link at `path` is replaced, never followed.
 *
 * @throws BadArgumentError for a relative path; SystemError when the host refuses.
 */
export async function writeFileDurably(
  file: string,
  data: string | Uint8Array,
  options: WriteDurablyOptions = {},
): Promise<void> {
  const target = validatePath(file);
  const parsed = parseOptions(writeDurablyOptionsSchema, options, 'writeFileDurably options');
  const dir = path.dirname(target);
  const temp = path.join(dir, `.${path.basename(target)}.karotte-${randomBytes(6).toString('hex')}.tmp`);
  try {
    if (parsed.createParents) await createParents(dir);
    const handle = await fsp.open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, parsed.mode);
    try {
      await handle.chmod(parsed.mode);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.rename(temp, target);
    await fsyncDirectory(dir);
  } catch (error) {
    await fsp.rm(temp, { force: true }).catch(() => undefined);
    if (BadArgumentError.isInstance(error)) throw error;
    throw toSystemError(error, `writing ${target} durably`);
  }
}

/** An append-only, line-oriented log whose every line is on disk when `append` resolves. */
export interface DurableLog {
  /** Absolute path of the log. */
  readonly path: string;
  /** Append one line (a trailing newline is added; the text must not contain one). */
  appendLine(text: string): Promise<void>;
  /** Append `JSON.stringify(value)` as one line (JSONL). */
  appendJson(value: unknown): Promise<void>;
  /** fsync and close; later appends reject. */
  close(): Promise<void>;
}

/**
 * Open (or create) a durable append-only log such as a JSONL transcript. Lines are written
 * with one `write` each on an O_APPEND descriptor and, by default, fdatasync'ed one by one;
 * appends are serialized in call order. A new file is fsynced into its directory.
 *
 * @throws BadArgumentError for a relative path; SystemError when the host refuses.
 */
export async function openDurableLog(file: string, options: DurableLogOptions = {}): Promise<DurableLog> {
  const target = validatePath(file);
  const parsed = parseOptions(durableLogOptionsSchema, options, 'openDurableLog options');
  const dir = path.dirname(target);
  let handle: fsp.FileHandle;
  try {
    if (parsed.createParents) await createParents(dir);
    let created = false;
    try {
      handle = await fsp.open(target, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW, parsed.mode);
      created = true;
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error;
      handle = await fsp.open(target, O_WRONLY | O_APPEND | O_NOFOLLOW);
    }
    const stats = await handle.stat();
    if (!stats.isFile()) {
      await handle.close();
      throw new BadArgumentError(`${target} is not a regular file`, { field: 'path' });
    }
    if (created) {
      await handle.chmod(parsed.mode);
      await handle.sync();
      await fsyncDirectory(dir);
    }
  } catch (error) {
    if (BadArgumentError.isInstance(error)) throw error;
    throw toSystemError(error, `opening durable log ${target}`);
  }
  const opened = handle;
  let queue: Promise<void> = Promise.resolve();
  let closed = false;

  const enqueue = (task: () => Promise<void>): Promise<void> => {
    const next = queue.then(task);
    // Keep the chain alive after a failure so later appends report their own outcome.
    queue = next.catch(() => undefined);
    return next;
  };

  const append = (text: string): Promise<void> => {
    if (text.includes('\n')) {
      return Promise.reject(new BadArgumentError('a log line must not contain a newline', { field: 'text' }));
    }
    if (closed) return Promise.reject(new BadArgumentError('the log is closed', { field: 'log' }));
    const bytes = Buffer.from(`${text}\n`);
    return enqueue(async () => {
      try {
        let offset = 0;
        while (offset < bytes.length) {
          const { bytesWritten } = await opened.write(bytes, offset, bytes.length - offset);
          offset += bytesWritten;
        }
        if (parsed.syncEveryLine) await opened.datasync();
      } catch (error) {
        throw toSystemError(error, `appending to ${target}`);
      }
    });
  };

  return {
    path: target,
    appendLine: append,
    appendJson: (value: unknown) => {
      const text = JSON.stringify(value);
      if (typeof text !== 'string') {
        return Promise.reject(new BadArgumentError('value is not JSON-serialisable', { field: 'value' }));
      }
      return append(text);
    },
    close: () => {
      if (closed) return queue;
      closed = true;
      return enqueue(async () => {
        try {
          await opened.sync();
        } finally {
          await opened.close();
        }
      });
    },
  };
}
