// Bounded, non-blocking, link-refusing file operations on paths the student controls, in
// this process (as the caller) or as another uid through the helper.
import { isUtf8 } from 'node:buffer';
import fs from 'node:fs';
import { BadArgumentError, escapeForDisplay, parseOptions } from '@karotte/base';
import { z } from 'zod';
import { FileGuardError } from './errors.js';
import {
  O_PATH,
  closeQuietly,
  errnoOf,
  lstatAt,
  readDirAt,
  reopen,
  splitComponents,
  statType,
} from './fd-path.js';
import type { EntryType } from './fd-path.js';
import { runHelper } from './helper.js';
import type { HelperOutcome, UntrustedFailureReason } from './helper.js';
import {
  listUntrustedOptionsSchema,
  readUntrustedOptionsSchema,
  statUntrustedOptionsSchema,
  writeUntrustedOptionsSchema,
} from './options.js';
import type {
  ListUntrustedOptions,
  ReadUntrustedOptions,
  StatUntrustedOptions,
  WriteUntrustedOptions,
} from './options.js';
import { classifyAt, openDirectoryComponents, procSelfFdWorks } from './walk.js';
import type { WalkFailure } from './walk.js';

const { O_RDONLY, O_NONBLOCK, O_NOCTTY, O_DIRECTORY } = fs.constants;
const READ_FLAGS = O_RDONLY | O_NONBLOCK | O_NOCTTY;

/** An operation that did not succeed, and why. Expected outcomes are data, never exceptions. */
export interface UntrustedFailure {
  readonly ok: false;
  readonly reason: UntrustedFailureReason;
  /** Human-readable detail; student-controlled parts are escaped. */
  readonly message: string;
  /** The file's size, when the reason is `TOO_LARGE`. */
  readonly size?: number;
  readonly durationMs: number;
}

/** A successful {@link readUntrusted}. */
export interface ReadUntrustedSuccess<Data> {
  readonly ok: true;
  /** The bytes (or text, with `encoding: 'utf8'`). */
  readonly data: Data;
  /** The file's size when it was opened (fstat). */
  readonly size: number;
  /** Bytes returned. */
  readonly bytesRead: number;
  /** Only the first `maxBytes` were returned (with `truncate`). */
  readonly truncated: boolean;
  readonly durationMs: number;
}

export type ReadUntrustedResult<Data = Buffer | string> = ReadUntrustedSuccess<Data> | UntrustedFailure;

/** A successful {@link writeUntrusted}. */
export interface WriteUntrustedSuccess {
  readonly ok: true;
  readonly bytesWritten: number;
  /** The file did not exist before. */
  readonly created: boolean;
  readonly durationMs: number;
}

export type WriteUntrustedResult = WriteUntrustedSuccess | UntrustedFailure;

/** Metadata of one entry (lstat: links are described, never followed). */
export interface UntrustedStat {
  readonly type: EntryType;
  readonly size: number;
  /** Permission bits (`mode & 0o7777`). */
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly nlink: number;
  readonly mtimeMs: number;
}

/** One directory entry from {@link listUntrusted}. */
export interface UntrustedEntry extends Partial<UntrustedStat> {
  /** The name, escaped for display. */
  readonly name: string;
  /** The exact name bytes. */
  readonly rawName: Buffer;
  readonly type: EntryType;
}

export type StatUntrustedResult =
  (UntrustedStat & { readonly ok: true; readonly durationMs: number }) | UntrustedFailure;

export type ListUntrustedResult =
  | {
      readonly ok: true;
      /** Entries sorted by raw name. */
      readonly entries: readonly UntrustedEntry[];
      /** There were more than `maxEntries`. */
      readonly truncated: boolean;
      readonly durationMs: number;
    }
  | UntrustedFailure;

/** Validate an untrusted-path argument: absolute, no NUL, no `.` or `..` component. */
function checkPath(input: string | Uint8Array): Buffer {
  const bytes = typeof input === 'string' ? Buffer.from(input) : Buffer.from(input);
  const bad = (why: string): never => {
    throw new BadArgumentError(`path ${escapeForDisplay(bytes)} ${why}`, { field: 'path' });
  };
  if (bytes.length === 0 || bytes[0] !== 0x2f) bad('must be absolute');
  if (bytes.indexOf(0) !== -1) bad('must not contain NUL');
  for (const part of splitComponents(bytes)) {
    const text = part.toString('latin1');
    if (text === '.' || text === '..') bad('must not contain . or .. components');
  }
  return bytes;
}

function failure(
  reason: UntrustedFailureReason,
  message: string,
  started: number,
  extra: { size?: number } = {},
): UntrustedFailure {
  return { ok: false, reason, message, ...extra, durationMs: performance.now() - started };
}

const ERRNO_REASONS: Readonly<Record<string, UntrustedFailureReason>> = {
  ENOENT: 'NOT_FOUND',
  EACCES: 'PERMISSION_DENIED',
  EPERM: 'PERMISSION_DENIED',
  ELOOP: 'SYMLINK',
  ENOTDIR: 'NOT_DIRECTORY',
  EISDIR: 'IS_DIRECTORY',
  ENXIO: 'NOT_REGULAR_FILE',
  ENODEV: 'NOT_REGULAR_FILE',
  ENAMETOOLONG: 'NAME_TOO_LONG',
  EAGAIN: 'BUSY',
  EWOULDBLOCK: 'BUSY',
};

function reasonOfErrno(errno: string | undefined): UntrustedFailureReason {
  return (errno === undefined ? undefined : ERRNO_REASONS[errno]) ?? 'IO_ERROR';
}

function walkFailureReason(walk: WalkFailure): UntrustedFailureReason {
  switch (walk.kind) {
    case 'symlink':
      return 'SYMLINK';
    case 'not-directory':
      return 'NOT_DIRECTORY';
    case 'missing':
      return 'NOT_FOUND';
    case 'denied':
      return 'PERMISSION_DENIED';
    case 'error':
      return reasonOfErrno(walk.errno);
  }
}

function describeNonRegular(type: EntryType): string {
  return type === 'directory' ? 'is a directory' : `is not a regular file (${type})`;
}

/**
 * Classify the final component of `pathBytes` in this process: every component through an
 * O_PATH|O_NOFOLLOW descriptor. Returns the O_PATH descriptor (caller closes) and its stats.
 */
function classifyInProcess(
  pathBytes: Buffer,
  started: number,
): { ok: true; pathFd: number; stats: fs.BigIntStats } | { ok: false; failure: UntrustedFailure } {
  const components = splitComponents(pathBytes);
  const display = escapeForDisplay(pathBytes);
  const rootFd = fs.openSync('/', O_PATH | O_DIRECTORY);
  try {
    if (!procSelfFdWorks(rootFd)) {
      throw new FileGuardError(
        'PROC_UNAVAILABLE',
        '/proc/self/fd does not resolve to this process: mount /proc',
      );
    }
    if (components.length === 0) {
      return {
        ok: true,
        pathFd: reopen(rootFd, O_PATH | O_DIRECTORY),
        stats: fs.fstatSync(rootFd, { bigint: true }),
      };
    }
    const parent = openDirectoryComponents(rootFd, components.slice(0, -1));
    if (!parent.ok) {
      return {
        ok: false,
        failure: failure(
          walkFailureReason(parent.failure),
          `${display}: a component of the path is unusable`,
          started,
        ),
      };
    }
    try {
      const classified = classifyAt(parent.fd, components[components.length - 1]!);
      if (!classified.ok) {
        return {
          ok: false,
          failure: failure(
            reasonOfErrno(classified.errno),
            `${display}: ${classified.errno ?? 'error'}`,
            started,
          ),
        };
      }
      if (classified.stats.isSymbolicLink()) {
        closeQuietly(classified.pathFd);
        return { ok: false, failure: failure('SYMLINK', `${display} is a symbolic link`, started) };
      }
      return { ok: true, pathFd: classified.pathFd, stats: classified.stats };
    } finally {
      closeQuietly(parent.fd);
    }
  } finally {
    closeQuietly(rootFd);
  }
}

/**
 * Read up to `limit` bytes with positional async reads; resolves `'timeout'` at the deadline.
 * Owns `fd`: it is closed once the last read settled (never under a pending read, so its
 * number cannot be reused while the thread pool still uses it). The caller never closes it.
 */
function readBounded(fd: number, limit: number, timeoutMs: number): Promise<Buffer | 'timeout'> {
  const chunks: Buffer[] = [];
  let total = 0;
  let expired = false;
  const work = (async () => {
    while (total < limit && !expired) {
      const buffer = Buffer.allocUnsafe(Math.min(1024 * 1024, limit - total));
      const n = await new Promise<number>((resolve, reject) => {
        fs.read(fd, buffer, 0, buffer.length, total, (error, bytesRead) => {
          if (error) reject(error);
          else resolve(bytesRead);
        });
      });
      if (n === 0) break;
      chunks.push(buffer.subarray(0, n));
      total += n;
    }
    return Buffer.concat(chunks);
  })();
  work.then(
    () => {
      closeQuietly(fd);
    },
    () => {
      closeQuietly(fd);
    },
  );
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      expired = true;
      resolve('timeout');
    }, timeoutMs);
  });
  return Promise.race([work, deadline]).finally(() => {
    clearTimeout(timer);
  });
}

function decode(
  data: Buffer,
  truncated: boolean,
  encoding: 'buffer' | 'utf8',
): { ok: true; value: Buffer | string } | { ok: false } {
  if (encoding === 'buffer') return { ok: true, value: data };
  let bytes = data;
  if (truncated) {
    // A cut may split the last character: drop an unfinished trailing sequence.
    for (let back = 1; back <= 3 && back <= bytes.length; back += 1) {
      const byte = bytes[bytes.length - back]!;
      if ((byte & 0xc0) === 0x80) continue;
      const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
      if (need > back) bytes = bytes.subarray(0, bytes.length - back);
      break;
    }
  }
  if (!isUtf8(bytes)) return { ok: false };
  return { ok: true, value: bytes.toString('utf8') };
}

/**
 * Read a file the student controls: bounded (`maxBytes`), non-blocking (O_NONBLOCK, a FIFO
 * or lease never blocks), never through a link (each component O_PATH|O_NOFOLLOW, unless
 * `followSymlinks` with `asUid`), regular files only (fstat on the opened descriptor), within
 * `timeoutMs`. With `asUid`, the read is done by a helper running as that uid, so only what
 * the uid may read is readable.
 *
 * Every refusal is a result (`ok: false` with a reason), never an exception.
 *
 * @throws BadArgumentError for a relative path or bad options; FileGuardError `ABORTED`,
 *   `PROC_UNAVAILABLE`, `HELPER_FAILED` (setpriv or node unusable: a host fault).
 */
export function readUntrusted(
  path: string | Uint8Array,
  options: ReadUntrustedOptions & { encoding: 'utf8' },
): Promise<ReadUntrustedResult<string>>;
export function readUntrusted(
  path: string | Uint8Array,
  options?: ReadUntrustedOptions & { encoding?: 'buffer' },
): Promise<ReadUntrustedResult<Buffer>>;
export async function readUntrusted(
  path: string | Uint8Array,
  options: ReadUntrustedOptions = {},
): Promise<ReadUntrustedResult> {
  const started = performance.now();
  const pathBytes = checkPath(path);
  const parsed = parseOptions(readUntrustedOptionsSchema, options, 'readUntrusted options');
  checkFollow(parsed.followSymlinks, parsed.asUid);
  if (parsed.abortSignal?.aborted === true) throw aborted(parsed.abortSignal);
  const display = escapeForDisplay(pathBytes);

  let data: Buffer;
  let size: number;
  let truncated: boolean;
  if (parsed.asUid !== undefined) {
    const outcome = await runHelper(
      {
        op: 'read',
        path: pathBytes,
        follow: parsed.followSymlinks,
        maxBytes: parsed.maxBytes,
        truncate: parsed.truncate,
      },
      helperRun(parsed, parsed.asUid, undefined, parsed.maxBytes),
    );
    const status = statusOrFailure(outcome, display, started);
    if (!status.ok) return status.failure;
    data = status.stdout;
    size = status.status.size ?? data.length;
    truncated = status.status.truncated ?? false;
    if (status.status.bytes !== data.length) {
      return failure('INTERRUPTED', `${display}: the helper's answer is inconsistent`, started);
    }
  } else {
    const classified = classifyInProcess(pathBytes, started);
    if (!classified.ok) return classified.failure;
    const { pathFd, stats } = classified;
    let fd: number;
    try {
      const type = statType(stats);
      if (type !== 'file')
        return failure(
          type === 'directory' ? 'IS_DIRECTORY' : 'NOT_REGULAR_FILE',
          `${display} ${describeNonRegular(type)}`,
          started,
        );
      size = Number(stats.size);
      if (size > parsed.maxBytes && !parsed.truncate) {
        return failure('TOO_LARGE', `${display} is ${size} bytes (limit ${parsed.maxBytes})`, started, {
          size,
        });
      }
      try {
        fd = reopen(pathFd, READ_FLAGS);
      } catch (error) {
        return failure(
          reasonOfErrno(errnoOf(error)),
          `${display}: ${errnoOf(error) ?? 'open failed'}`,
          started,
        );
      }
    } finally {
      closeQuietly(pathFd);
    }
    let got: Buffer | 'timeout';
    const read = readBounded(fd, parsed.maxBytes + 1, parsed.timeoutMs);
    try {
      got = await read;
    } catch (error) {
      return failure(
        reasonOfErrno(errnoOf(error)),
        `${display}: ${errnoOf(error) ?? 'read failed'}`,
        started,
      );
    }
    if (got === 'timeout') {
      // readBounded closes the descriptor once the pending read settles.
      return failure('TIMED_OUT', `${display}: no data within ${parsed.timeoutMs} ms`, started);
    }
    truncated = false;
    if (got.length > parsed.maxBytes) {
      if (!parsed.truncate) {
        return failure('TOO_LARGE', `${display} grew past ${parsed.maxBytes} bytes`, started, {
          size: got.length,
        });
      }
      got = got.subarray(0, parsed.maxBytes);
      truncated = true;
    }
    data = got;
  }
  const decoded = decode(data, truncated, parsed.encoding);
  if (!decoded.ok) return failure('NOT_UTF8', `${display} is not UTF-8 text`, started);
  return {
    ok: true,
    data: decoded.value,
    size,
    bytesRead: data.length,
    truncated,
    durationMs: performance.now() - started,
  };
}

/**
 * Write a file as the student (`asUid` is required: the harness never writes a student path
 * as root). The helper classifies the path through O_PATH|O_NOFOLLOW descriptors, refuses a
 * link, FIFO, device or directory at the target, creates new files exclusively (O_EXCL,
 * `fileMode`), and truncates only after checking that the target is a regular file.
 *
 * @throws BadArgumentError for a relative path, a missing `asUid` or a payload over
 *   `maxBytes`; FileGuardError `ABORTED`, `PROC_UNAVAILABLE`, `HELPER_FAILED`.
 */
export async function writeUntrusted(
  path: string | Uint8Array,
  data: string | Uint8Array,
  options: WriteUntrustedOptions,
): Promise<WriteUntrustedResult> {
  const started = performance.now();
  const pathBytes = checkPath(path);
  const parsed = parseOptions(writeUntrustedOptionsSchema, options, 'writeUntrusted options');
  const payload = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
  if (payload.length > parsed.maxBytes) {
    throw new BadArgumentError(`data is ${payload.length} bytes, over maxBytes ${parsed.maxBytes}`, {
      field: 'data',
    });
  }
  if (parsed.abortSignal?.aborted === true) throw aborted(parsed.abortSignal);
  const display = escapeForDisplay(pathBytes);
  const outcome = await runHelper(
    {
      op: 'write',
      path: pathBytes,
      follow: parsed.followSymlinks,
      mode: parsed.mode,
      fileMode: parsed.fileMode,
      fsync: parsed.fsync,
      length: payload.length,
    },
    helperRun(parsed, parsed.asUid, payload, 0),
  );
  const status = statusOrFailure(outcome, display, started);
  if (!status.ok) return status.failure;
  if (status.status.bytesWritten !== payload.length) {
    return failure('INTERRUPTED', `${display}: the helper's answer is inconsistent`, started);
  }
  return {
    ok: true,
    bytesWritten: payload.length,
    created: status.status.created ?? false,
    durationMs: performance.now() - started,
  };
}

/**
 * Describe one path (lstat semantics: a link is described, not followed, unless
 * `followSymlinks` with `asUid`). Links on the way to it are refused.
 *
 * @throws as {@link readUntrusted}.
 */
export async function statUntrusted(
  path: string | Uint8Array,
  options: StatUntrustedOptions = {},
): Promise<StatUntrustedResult> {
  const started = performance.now();
  const pathBytes = checkPath(path);
  const parsed = parseOptions(statUntrustedOptionsSchema, options, 'statUntrusted options');
  checkFollow(parsed.followSymlinks, parsed.asUid);
  if (parsed.abortSignal?.aborted === true) throw aborted(parsed.abortSignal);
  const display = escapeForDisplay(pathBytes);
  if (parsed.asUid !== undefined) {
    const outcome = await runHelper(
      { op: 'stat', path: pathBytes, follow: parsed.followSymlinks },
      helperRun(parsed, parsed.asUid, undefined, 0),
    );
    const status = statusOrFailure(outcome, display, started);
    if (!status.ok) return status.failure;
    const s = status.status;
    const type = entryTypeSchema.safeParse(s.type);
    if (
      !type.success ||
      s.size === undefined ||
      s.mode === undefined ||
      s.uid === undefined ||
      s.gid === undefined
    ) {
      return failure('INTERRUPTED', `${display}: the helper's answer is incomplete`, started);
    }
    return {
      ok: true,
      type: type.data,
      size: s.size,
      mode: s.mode,
      uid: s.uid,
      gid: s.gid,
      nlink: s.nlink ?? 1,
      mtimeMs: s.mtimeMs ?? 0,
      durationMs: performance.now() - started,
    };
  }
  // A link at the final component is described (lstat), not refused.
  const components = splitComponents(pathBytes);
  const rootFd = fs.openSync('/', O_PATH | O_DIRECTORY);
  try {
    if (!procSelfFdWorks(rootFd)) {
      throw new FileGuardError(
        'PROC_UNAVAILABLE',
        '/proc/self/fd does not resolve to this process: mount /proc',
      );
    }
    if (components.length === 0)
      return {
        ok: true,
        ...statOf(fs.fstatSync(rootFd, { bigint: true })),
        durationMs: performance.now() - started,
      };
    const parent = openDirectoryComponents(rootFd, components.slice(0, -1));
    if (!parent.ok) {
      return failure(
        walkFailureReason(parent.failure),
        `${display}: a component of the path is unusable`,
        started,
      );
    }
    try {
      const stats = lstatAt(parent.fd, components[components.length - 1]!);
      return { ok: true, ...statOf(stats), durationMs: performance.now() - started };
    } catch (error) {
      return failure(
        reasonOfErrno(errnoOf(error)),
        `${display}: ${errnoOf(error) ?? 'lstat failed'}`,
        started,
      );
    } finally {
      closeQuietly(parent.fd);
    }
  } finally {
    closeQuietly(rootFd);
  }
}

/**
 * List a directory the student controls: entries sorted by raw name, each described by lstat
 * (links are never followed), at most `maxEntries`. Links on the way to the directory are
 * refused (unless `followSymlinks` with `asUid`).
 *
 * @throws as {@link readUntrusted}.
 */
export async function listUntrusted(
  path: string | Uint8Array,
  options: ListUntrustedOptions = {},
): Promise<ListUntrustedResult> {
  const started = performance.now();
  const pathBytes = checkPath(path);
  const parsed = parseOptions(listUntrustedOptionsSchema, options, 'listUntrusted options');
  checkFollow(parsed.followSymlinks, parsed.asUid);
  if (parsed.abortSignal?.aborted === true) throw aborted(parsed.abortSignal);
  const display = escapeForDisplay(pathBytes);
  if (parsed.asUid !== undefined) {
    const outcome = await runHelper(
      { op: 'list', path: pathBytes, follow: parsed.followSymlinks, maxEntries: parsed.maxEntries },
      helperRun(parsed, parsed.asUid, undefined, parsed.maxEntries * 2048 + 4096),
    );
    const status = statusOrFailure(outcome, display, started);
    if (!status.ok) return status.failure;
    let raw: unknown;
    try {
      // eslint-disable-next-line no-restricted-syntax -- bounded by the stdout cap and validated by a strict zod schema
      raw = JSON.parse(status.stdout.toString('utf8'));
    } catch {
      return failure('INTERRUPTED', `${display}: the helper answered garbage`, started);
    }
    const listed = helperListSchema.safeParse(raw);
    if (!listed.success || listed.data.length > parsed.maxEntries) {
      return failure('INTERRUPTED', `${display}: the helper answered an invalid listing`, started);
    }
    const entries = listed.data.map((entry): UntrustedEntry => {
      const rawName = Buffer.from(entry.name, 'base64');
      const out: { -readonly [K in keyof UntrustedEntry]: UntrustedEntry[K] } = {
        name: escapeForDisplay(rawName),
        rawName,
        type: entry.type,
      };
      if (entry.size !== undefined) out.size = entry.size;
      if (entry.mode !== undefined) out.mode = entry.mode;
      if (entry.uid !== undefined) out.uid = entry.uid;
      if (entry.gid !== undefined) out.gid = entry.gid;
      if (entry.nlink !== undefined) out.nlink = entry.nlink;
      if (entry.mtimeMs !== undefined) out.mtimeMs = entry.mtimeMs;
      return out;
    });
    return {
      ok: true,
      entries,
      truncated: status.status.truncated ?? false,
      durationMs: performance.now() - started,
    };
  }
  const classified = classifyInProcess(pathBytes, started);
  if (!classified.ok) return classified.failure;
  let dirFd: number;
  try {
    if (!classified.stats.isDirectory()) {
      return failure(
        'NOT_DIRECTORY',
        `${display} ${describeNonRegular(statType(classified.stats))}`,
        started,
      );
    }
    try {
      dirFd = reopen(classified.pathFd, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
    } catch (error) {
      return failure(
        reasonOfErrno(errnoOf(error)),
        `${display}: ${errnoOf(error) ?? 'open failed'}`,
        started,
      );
    }
  } finally {
    closeQuietly(classified.pathFd);
  }
  try {
    const listing = readDirAt(dirFd, parsed.maxEntries);
    const names = listing.entries.slice(0, parsed.maxEntries).sort((a, b) => Buffer.compare(a.name, b.name));
    const entries = names.map((entry): UntrustedEntry => {
      try {
        const stats = lstatAt(dirFd, entry.name);
        return { name: escapeForDisplay(entry.name), rawName: entry.name, ...statOf(stats) };
      } catch {
        return { name: escapeForDisplay(entry.name), rawName: entry.name, type: entry.type };
      }
    });
    return { ok: true, entries, truncated: listing.overflow, durationMs: performance.now() - started };
  } catch (error) {
    return failure(
      reasonOfErrno(errnoOf(error)),
      `${display}: ${errnoOf(error) ?? 'readdir failed'}`,
      started,
    );
  } finally {
    closeQuietly(dirFd);
  }
}

const entryTypeSchema = z.enum([
  'file',
  'directory',
  'symlink',
  'fifo',
  'socket',
  'char-device',
  'block-device',
  'unknown',
]);

const helperListSchema = z.array(
  z
    .object({
      name: z.string().max(1024),
      type: entryTypeSchema,
      size: z.number().optional(),
      mode: z.number().optional(),
      uid: z.number().optional(),
      gid: z.number().optional(),
      nlink: z.number().optional(),
      mtimeMs: z.number().optional(),
      error: z.string().max(64).optional(),
    })
    .strict(),
);

function statOf(stats: fs.BigIntStats): UntrustedStat {
  return {
    type: statType(stats),
    size: Number(stats.size),
    mode: Number(stats.mode) & 0o7777,
    uid: Number(stats.uid),
    gid: Number(stats.gid),
    nlink: Number(stats.nlink),
    mtimeMs: Number(stats.mtimeNs) / 1e6,
  };
}

function checkFollow(follow: boolean, asUid: number | undefined): void {
  if (follow && asUid === undefined) {
    throw new BadArgumentError(
      'followSymlinks is only allowed with asUid (never follow a student link as the harness)',
      {
        field: 'followSymlinks',
      },
    );
  }
}

function aborted(signal: AbortSignal): FileGuardError {
  return new FileGuardError('ABORTED', 'the operation was aborted', { cause: signal.reason });
}

function helperRun(
  parsed: {
    asGid?: number | undefined;
    mountNamespace?: string | undefined;
    timeoutMs: number;
    abortSignal?: AbortSignal | undefined;
  },
  asUid: number,
  stdin: Buffer | undefined,
  stdoutCap: number,
): Parameters<typeof runHelper>[1] {
  return {
    asUid,
    asGid: parsed.asGid ?? asUid,
    mountNamespace: parsed.mountNamespace,
    timeoutMs: parsed.timeoutMs,
    abortSignal: parsed.abortSignal,
    stdin,
    stdoutCap,
  };
}

function statusOrFailure(
  outcome: HelperOutcome,
  display: string,
  started: number,
):
  | { ok: true; status: Extract<HelperOutcome, { kind: 'status' }>['status'] & { ok: true }; stdout: Buffer }
  | { ok: false; failure: UntrustedFailure } {
  if (outcome.kind === 'failed')
    return { ok: false, failure: failure(outcome.reason, `${display}: ${outcome.message}`, started) };
  const status = outcome.status;
  if (!status.ok) {
    const reason = status.reason === 'PROC_UNAVAILABLE' ? 'IO_ERROR' : status.reason;
    return {
      ok: false,
      failure: failure(
        reason,
        `${display}: ${escapeForDisplay(status.message)}`,
        started,
        reason === 'TOO_LARGE' && status.size !== undefined ? { size: status.size } : {},
      ),
    };
  }
  return { ok: true, status, stdout: outcome.stdout };
}
