// Copying one regular file's bytes: SHA-256, text check and hole detection in one pass.
//
// Small files (one chunk) are copied with synchronous positional I/O: per-file overhead
// dominates there, and a thread-pool round trip would double it. Larger files use a
// three-buffer pipeline: the next chunk is read and the previous one written on libuv's
// thread pool while this thread hashes the current one, so hashing (the bottleneck) overlaps
// the I/O. Every in-flight operation is awaited before returning or throwing: a descriptor
// is never closed (and its number never reused) under a pending read or write.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { TextCheck } from './file-types.js';
import { MAGIC_SAMPLE_BYTES } from './file-types.js';

/** Copy granularity; an all-zero chunk is skipped (a hole in the copy). */
const CHUNK_BYTES = 1024 * 1024;

/** Reusable buffers for one custody run. */
export interface CopyBuffers {
  readonly chunks: readonly [Buffer, Buffer, Buffer];
  readonly zero: Buffer;
}

export function createCopyBuffers(): CopyBuffers {
  return {
    chunks: [
      Buffer.allocUnsafe(CHUNK_BYTES),
      Buffer.allocUnsafe(CHUNK_BYTES),
      Buffer.allocUnsafe(CHUNK_BYTES),
    ],
    zero: Buffer.alloc(CHUNK_BYTES),
  };
}

/** Where a copy failed: the source (read side) or the destination (write side). */
export class CopyIoError extends Error {
  constructor(
    readonly side: 'source' | 'destination',
    override readonly cause: unknown,
  ) {
    super(`${side} I/O failed`);
  }
}

export interface CopiedData {
  readonly sha256: string;
  readonly sparse: boolean;
  readonly text: boolean;
  /** The first bytes (up to MAGIC_SAMPLE_BYTES), for magic-number detection. */
  readonly head: Buffer;
  /**
   * False when the source held fewer than `size` bytes (it shrank while copied). Growth and
   * rewrites are caught by the caller's fstat after the copy (size, mtime, ctime).
   */
  readonly sizeMatched: boolean;
}

function isZero(chunk: Buffer, zero: Buffer): boolean {
  return chunk.equals(chunk.length === zero.length ? zero : zero.subarray(0, chunk.length));
}

function readFullSync(fd: number, buffer: Buffer, length: number, position: number): number {
  let done = 0;
  while (done < length) {
    let n: number;
    try {
      n = fs.readSync(fd, buffer, done, length - done, position + done);
    } catch (error) {
      throw new CopyIoError('source', error);
    }
    if (n === 0) break;
    done += n;
  }
  return done;
}

function writeFullSync(fd: number, buffer: Buffer, position: number): void {
  let done = 0;
  while (done < buffer.length) {
    try {
      done += fs.writeSync(fd, buffer, done, buffer.length - done, position + done);
    } catch (error) {
      throw new CopyIoError('destination', error);
    }
  }
}

function read(fd: number, buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    fs.read(fd, buffer, offset, length, position, (error, bytesRead) => {
      if (error) reject(new CopyIoError('source', error));
      else resolve(bytesRead);
    });
  });
}

function write(
  fd: number,
  buffer: Buffer,
  offset: number,
  length: number,
  position: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    fs.write(fd, buffer, offset, length, position, (error, written) => {
      if (error) reject(new CopyIoError('destination', error));
      else resolve(written);
    });
  });
}

async function readFull(fd: number, buffer: Buffer, length: number, position: number): Promise<number> {
  let done = 0;
  while (done < length) {
    const n = await read(fd, buffer, done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

async function writeFull(fd: number, buffer: Buffer, length: number, position: number): Promise<void> {
  let done = 0;
  while (done < length) done += await write(fd, buffer, done, length - done, position + done);
}

/** A promise that never rejects: the outcome is inspected when awaited. */
type Settled<T> = Promise<{ ok: true; value: T } | { ok: false; error: unknown }>;
function settle<T>(promise: Promise<T>): Settled<T> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/**
 * Copy `size` bytes from `srcFd` to `destFd` (a fresh empty file), hashing and checking
 * every byte. All-zero chunks are not written; the file is extended to `size` at the end.
 *
 * @throws CopyIoError naming the side that failed.
 */
export async function copyData(
  srcFd: number,
  destFd: number,
  size: number,
  buffers: CopyBuffers,
  checkpoint: () => void,
): Promise<CopiedData> {
  const hash = createHash('sha256');
  const text = new TextCheck();
  let sparse = false;
  let head: Buffer;
  let sizeMatched = true;

  if (size <= CHUNK_BYTES) {
    const buffer = buffers.chunks[0];
    const n = readFullSync(srcFd, buffer, size, 0);
    if (n !== size) sizeMatched = false;
    const chunk = buffer.subarray(0, n);
    hash.update(chunk);
    text.update(chunk);
    head = chunk.length > MAGIC_SAMPLE_BYTES ? chunk.subarray(0, MAGIC_SAMPLE_BYTES) : chunk;
    if (n > 0 && isZero(chunk, buffers.zero)) sparse = true;
    else if (n > 0) writeFullSync(destFd, chunk, 0);
  } else {
    const chunks = Math.ceil(size / CHUNK_BYTES);
    const pendingWrites: (Settled<void> | undefined)[] = [undefined, undefined, undefined];
    const lengthOf = (index: number): number => Math.min(CHUNK_BYTES, size - index * CHUNK_BYTES);
    const startRead = (index: number): Settled<number> =>
      settle(readFull(srcFd, buffers.chunks[index % 3]!, lengthOf(index), index * CHUNK_BYTES));
    let pendingRead: Settled<number> | undefined = startRead(0);
    let failure: unknown;
    head = Buffer.alloc(0);
    try {
      for (let index = 0; index < chunks; index += 1) {
        const outcome = await pendingRead!;
        pendingRead = undefined;
        if (!outcome.ok) throw outcome.error;
        const n = outcome.value;
        if (n !== lengthOf(index)) {
          sizeMatched = false;
          break;
        }
        const next = index + 1;
        if (next < chunks) {
          // The buffer of chunk `next` was last used by chunk `next - 3`: its write must be done.
          const slot = pendingWrites[next % 3];
          pendingWrites[next % 3] = undefined;
          if (slot !== undefined) {
            const written = await slot;
            if (!written.ok) throw written.error;
          }
          pendingRead = startRead(next);
        }
        const chunk = buffers.chunks[index % 3]!.subarray(0, n);
        hash.update(chunk);
        text.update(chunk);
        if (index === 0) head = Buffer.from(chunk.subarray(0, MAGIC_SAMPLE_BYTES));
        if (isZero(chunk, buffers.zero)) sparse = true;
        else pendingWrites[index % 3] = settle(writeFull(destFd, chunk, n, index * CHUNK_BYTES));
        checkpoint();
      }
    } catch (error) {
      failure = error;
    } finally {
      // Drain everything in flight before the caller may close a descriptor.
      const inflight = await Promise.all([pendingRead, ...pendingWrites].filter((p) => p !== undefined));
      for (const outcome of inflight) {
        if (!outcome.ok && failure === undefined) failure = outcome.error;
      }
    }
    if (failure !== undefined) throw failure instanceof Error ? failure : new CopyIoError('source', failure);
  }

  if (sparse) {
    try {
      fs.ftruncateSync(destFd, size);
    } catch (error) {
      throw new CopyIoError('destination', error);
    }
  }
  return { sha256: hash.digest('hex'), sparse, text: text.finish(), head, sizeMatched };
}
