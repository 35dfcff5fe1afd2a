// takeCustody(): copy the declared submission paths into a fresh root-only directory,
// refusing every trick (links, FIFOs, devices, sockets, hard links, budget overruns, hostile
// names) with a misbehavior record, and describing the copy in a manifest.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MisbehaviorCode, MisbehaviorRecord } from '@karotte/base';
import {
  BadArgumentError,
  createMisbehavior,
  escapeForDisplay,
  parseOptions,
  toSystemError,
} from '@karotte/base';
import { z } from 'zod';
import { CopyIoError, copyData, createCopyBuffers } from './copy-data.js';
import type { CopiedData, CopyBuffers } from './copy-data.js';
import { FileGuardError } from './errors.js';
import {
  DIR_FLAGS,
  FILE_FLAGS,
  closeQuietly,
  errnoOf,
  fdRealPath,
  joinComponents,
  mkdirAt,
  openAt,
  readDirAt,
  readlinkAt,
  reopen,
  splitComponents,
  symlinkAt,
  childPath,
} from './fd-path.js';
import type { DirEntry, EntryType } from './fd-path.js';
import { detectType, policyViolation } from './file-types.js';
import type { CustodyEntry, CustodyManifest, CustodySourceStatus } from './manifest.js';
import { custodyOptionsSchema, custodySourceSchema } from './options.js';
import type { CustodyOptions, CustodySource, FileTypePolicy, ParsedCustodyOptions } from './options.js';
import {
  REOPEN_DIR_FLAGS,
  classifyAt,
  isInside,
  openAbsoluteDirectory,
  openDirectoryComponents,
  procSelfFdWorks,
} from './walk.js';
import type { WalkFailure } from './walk.js';
import { Scheduler } from './yield.js';

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_RDONLY } = fs.constants;
const DEST_FILE_FLAGS = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
const DEST_DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** A reopen through the magic link cannot carry O_NOFOLLOW (the link is the final component). */
const REOPEN_FILE_FLAGS = FILE_FLAGS & ~O_NOFOLLOW;
const PATH_MAX = 4096;
const TEXT_TYPE = Object.freeze({ mime: 'text/plain', ext: null, text: true });

/** Errors at the destination the student can provoke (a huge or deep submission, a full quota). */
const STUDENT_DEST_ERRNOS: ReadonlySet<string> = new Set([
  'ENOSPC',
  'EDQUOT',
  'ENAMETOOLONG',
  'EFBIG',
  'EEXIST',
  'EMLINK',
]);

/** The outcome of {@link takeCustody}. */
export interface CustodyResult {
  /** True when nothing was refused: `destination` holds the copy. */
  readonly ok: boolean;
  /** The custody directory (0700, files 0600), or undefined when refused (nothing is kept). */
  readonly destination: string | undefined;
  /** What was copied, refused and absent; JSON-serialisable (`custodyManifestSchema`). */
  readonly manifest: CustodyManifest;
  /** Every refusal as a misbehavior record (empty when `ok`). */
  readonly misbehavior: readonly MisbehaviorRecord[];
}

/** A refusal, thrown inside the walk and always caught per declared path (never escapes). */
class Refusal extends Error {
  constructor(
    readonly record: MisbehaviorRecord,
    /** Stop every remaining declared path too (a global budget or a full destination). */
    readonly global: boolean,
  ) {
    super(record.message);
  }
}

interface Source {
  readonly declared: string;
  readonly components: readonly Buffer[];
  readonly type: FileTypePolicy | undefined;
  readonly allowSymlinks: boolean;
}

interface Context {
  readonly options: ParsedCustodyOptions;
  readonly rootReal: Buffer;
  readonly buffers: CopyBuffers;
  readonly scheduler: Scheduler;
  readonly deadline: number;
  /**
   * The umask removes owner bits: fchmod every copy to exactly 0600/0700. (A umask can only
   * remove bits, so the copies are root-only either way; the usual 022 needs no fchmod.)
   */
  readonly fixModes: boolean;
  readonly entries: CustodyEntry[];
  readonly totals: { files: number; directories: number; symlinks: number; entries: number; bytes: number };
}

/** Per-source state while walking one declared path. */
interface SourceWalk {
  readonly source: Source;
  /** Relative path of the declared path itself (for lexical link containment). */
  readonly base: Buffer;
}

function refuse(code: MisbehaviorCode, rel: Buffer, reason: string, global = false): Refusal {
  return new Refusal(createMisbehavior(code, `${escapeForDisplay(rel)} ${reason}`, rel), global);
}

/**
 * Take the declared submission paths into custody.
 *
 * `sources` are files or directories relative to `options.root`. Each is copied to the same
 * relative path in a fresh directory only the caller can read (dirs 0700, files 0600, every
 * entry created exclusively). The walk never follows a link: each component is classified
 * through an O_PATH|O_NOFOLLOW descriptor and reopened through that descriptor; files are
 * opened O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_NOCTTY and judged by fstat of the open descriptor;
 * every descriptor's kernel path (/proc/self/fd) must lie inside the root.
 *
 * Refused (misbehavior, the copy is removed): links (inner links are recreated only when
 * allowed, and only when they stay inside the declared directory), FIFOs, sockets, devices,
 * hard links to files the student does not own, files over `maxFileBytes`, trees over
 * `maxTotalBytes`, `maxEntries` or `maxDepth`, names or paths over their limits, content
 * that breaks a file-type rule, a file that changes while copied, destination errors the
 * student can provoke (ENOSPC, EDQUOT, ENAMETOOLONG, EFBIG). A declared path that does not
 * exist is not misbehavior: it is listed as absent and the grader decides.
 *
 * Must run after every student process is confirmed dead.
 *
 * @throws BadArgumentError for invalid options, overlapping sources, or a root reached
 *   through a root-owned link (pass a canonical root).
 * @throws FileGuardError `DESTINATION_EXISTS`, `ABORTED`, `TIMED_OUT`, `PROC_UNAVAILABLE`.
 * @throws SystemError for host faults (EIO, a destination the caller cannot write).
 */
export async function takeCustody(
  sources: readonly CustodySource[],
  options: CustodyOptions,
): Promise<CustodyResult> {
  const parsed = parseOptions(custodyOptionsSchema, options, 'custody options');
  const parsedSources = parseSources(sources, parsed);
  const startedAt = new Date();
  const started = performance.now();
  const scheduler = new Scheduler(parsed.abortSignal);
  scheduler.checkAbort();

  const destination = parsed.destination;
  const destParent = parsed.destinationParent ?? os.tmpdir();
  // The grader must be able to open every copy by absolute path: keep under PATH_MAX.
  const destLength = Buffer.byteLength(destination ?? path.join(destParent, 'karotte-custody-XXXXXX'));
  if (destLength + 1 + parsed.maxPathBytes >= PATH_MAX) {
    throw new BadArgumentError(
      `destination path (${destLength} bytes) plus maxPathBytes (${parsed.maxPathBytes}) must stay under PATH_MAX (${PATH_MAX})`,
      { field: destination === undefined ? 'destinationParent' : 'destination' },
    );
  }
  const destCandidate = destination ?? destParent;
  if (isInside(Buffer.from(destCandidate), Buffer.from(parsed.root))) {
    throw new BadArgumentError('the custody destination must not lie inside the root the student controls', {
      field: destination === undefined ? 'destinationParent' : 'destination',
    });
  }

  const budgets = {
    maxFileBytes: parsed.maxFileBytes,
    maxTotalBytes: parsed.maxTotalBytes,
    maxEntries: parsed.maxEntries,
    maxDepth: parsed.maxDepth,
    maxNameBytes: parsed.maxNameBytes,
    maxPathBytes: parsed.maxPathBytes,
  };
  const statuses: CustodySourceStatus[] = [];
  const refusals: MisbehaviorRecord[] = [];
  const absent: string[] = [];
  const ctxTotals = { files: 0, directories: 0, symlinks: 0, entries: 0, bytes: 0 };
  const entries: CustodyEntry[] = [];

  const finish = (ok: boolean, dest: string | undefined): CustodyResult => {
    const manifest: CustodyManifest = {
      version: 1,
      ok,
      root: escapeForDisplay(parsed.root),
      destination: ok && dest !== undefined ? dest : null,
      startedAt: startedAt.toISOString(),
      durationMs: performance.now() - started,
      budgets,
      totals: ok ? ctxTotals : { files: 0, directories: 0, symlinks: 0, entries: 0, bytes: 0 },
      sources: statuses,
      entries: ok ? entries.sort((a, b) => Buffer.compare(rawOf(a), rawOf(b))) : [],
      refusals,
      absent,
    };
    return { ok, destination: ok ? dest : undefined, manifest, misbehavior: refusals };
  };

  // 1. The root: walked from `/` without following a link.
  const root = openAbsoluteDirectory(Buffer.from(parsed.root));
  if (!root.ok) {
    const record = rootFailure(parsed.root, root.failure);
    refusals.push(record);
    for (const source of parsedSources) statuses.push({ path: source.declared, status: 'skipped' });
    return finish(false, undefined);
  }
  const rootFd = root.fd;
  let destFd: number | undefined;
  let created: string | undefined;
  try {
    if (!procSelfFdWorks(rootFd)) {
      throw new FileGuardError(
        'PROC_UNAVAILABLE',
        '/proc/self/fd does not resolve to this process: mount /proc for this PID namespace',
      );
    }
    // 2. The destination: fresh, 0700, created exclusively.
    created = createDestination(destination, destParent);
    destFd = fs.openSync(created, DEST_DIR_FLAGS);
    if (isInside(fdRealPath(destFd), root.real)) {
      throw new BadArgumentError('the custody destination resolves inside the root', {
        field: 'destination',
      });
    }
    const ctx: Context = {
      options: parsed,
      rootReal: root.real,
      buffers: createCopyBuffers(),
      scheduler,
      deadline: started + parsed.timeoutMs,
      fixModes: (currentUmask() & 0o700) !== 0,
      entries,
      totals: ctxTotals,
    };
    let stopAll = false;
    for (const source of parsedSources) {
      if (stopAll) {
        statuses.push({ path: source.declared, status: 'skipped' });
        continue;
      }
      try {
        const outcome = await copySource(ctx, rootFd, destFd, source);
        if (outcome === 'absent') {
          absent.push(source.declared);
          statuses.push({ path: source.declared, status: 'absent' });
        } else {
          statuses.push({ path: source.declared, status: 'copied', kind: outcome });
        }
      } catch (error) {
        if (!(error instanceof Refusal)) throw error;
        refusals.push(error.record);
        statuses.push({ path: source.declared, status: 'refused' });
        if (error.global) stopAll = true;
      }
    }
    const ok = refusals.length === 0;
    closeQuietly(destFd);
    destFd = undefined;
    if (!ok) {
      removeDestination(created);
      created = undefined;
      return finish(false, undefined);
    }
    const result = finish(true, created);
    created = undefined; // keep it
    return result;
  } finally {
    closeQuietly(rootFd);
    closeQuietly(destFd);
    if (created !== undefined) removeDestination(created);
  }
}

/** The process umask from /proc/self/status (process.umask() would write it, racing threads). */
function currentUmask(): number {
  try {
    const match = /^Umask:\s*([0-7]+)/m.exec(fs.readFileSync('/proc/self/status', 'latin1'));
    if (match !== null) return Number.parseInt(match[1]!, 8);
  } catch {
    // fall through
  }
  return 0o777; // unknown: fix every mode explicitly
}

function rawOf(entry: CustodyEntry): Buffer {
  return Buffer.from(entry.rawPath, 'base64');
}

function parseSources(sources: readonly CustodySource[], options: ParsedCustodyOptions): Source[] {
  const list = parseOptions(z.array(custodySourceSchema), sources, 'custody sources');
  const out: Source[] = list.map((source) => {
    const spec = typeof source === 'string' ? { path: source } : source;
    const declared = spec.path.replace(/\/$/, '');
    return {
      declared,
      components: splitComponents(Buffer.from(declared)),
      type: spec.type ?? options.type,
      allowSymlinks: spec.allowSymlinks ?? options.allowSymlinks,
    };
  });
  for (let i = 0; i < out.length; i += 1) {
    for (let j = 0; j < out.length; j += 1) {
      if (i === j) continue;
      const a = out[i]!.declared;
      const b = out[j]!.declared;
      if (a === b || b.startsWith(`${a}/`)) {
        throw new BadArgumentError(`declared paths overlap: ${JSON.stringify(a)} and ${JSON.stringify(b)}`, {
          field: `sources[${j}]`,
        });
      }
    }
  }
  return out;
}

function rootFailure(root: string, failure: WalkFailure): MisbehaviorRecord {
  const prefix = joinComponents(splitComponents(Buffer.from(root)).slice(0, failure.index + 1));
  const at = `/${prefix.toString()}`;
  switch (failure.kind) {
    case 'symlink':
      if (failure.ownerUid === 0) {
        throw new BadArgumentError(
          `the root ${root} goes through the root-owned link ${at}: pass a canonical path (fs.realpathSync)`,
          { field: 'root' },
        );
      }
      return createMisbehavior(
        'SYMLINK',
        `the submission root goes through a symbolic link at ${escapeForDisplay(at)}`,
        at,
      );
    case 'missing':
      return createMisbehavior(
        'TAMPERING',
        `the submission root ${escapeForDisplay(root)} does not exist`,
        root,
      );
    case 'not-directory':
      return createMisbehavior('NOT_DIRECTORY', `${escapeForDisplay(at)} is not a directory`, at);
    case 'denied':
      return createMisbehavior(
        'UNREADABLE',
        `cannot open the submission root at ${escapeForDisplay(at)}`,
        at,
      );
    case 'error':
      throw toSystemError(failure.cause, `opening the submission root ${root}`);
  }
}

function createDestination(destination: string | undefined, parent: string): string {
  if (destination !== undefined) {
    try {
      fs.mkdirSync(destination, { mode: 0o700 });
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') {
        throw new FileGuardError(
          'DESTINATION_EXISTS',
          `the custody destination ${destination} already exists`,
          {
            cause: error,
          },
        );
      }
      throw toSystemError(error, `creating the custody destination ${destination}`);
    }
    fs.chmodSync(destination, 0o700);
    return destination;
  }
  try {
    const dir = fs.mkdtempSync(path.join(parent, 'karotte-custody-'));
    fs.chmodSync(dir, 0o700);
    return dir;
  } catch (error) {
    throw toSystemError(error, `creating a custody directory in ${parent}`);
  }
}

function removeDestination(dir: string): void {
  // Only this process ever wrote into it (0700, ours), and no path in it exceeds PATH_MAX.
  fs.rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
}

/**
 * Map an error at the destination: student-provokable ones are misbehavior (returned),
 * others host faults (thrown as SystemError). Exported for unit tests.
 */
export function destinationFailure(error: unknown, rel: Buffer): Refusal {
  const errno = errnoOf(error);
  if (errno !== undefined && STUDENT_DEST_ERRNOS.has(errno)) {
    return refuse(
      'CANNOT_SAVE',
      rel,
      `cannot be saved: ${errno}`,
      errno !== 'EEXIST' && errno !== 'ENAMETOOLONG',
    );
  }
  throw toSystemError(error, `writing the custody copy of ${escapeForDisplay(rel)}`);
}

/** Map an error opening or reading a source entry. */
function sourceFailure(error: unknown, rel: Buffer): Refusal {
  const errno = errnoOf(error);
  switch (errno) {
    case 'ELOOP':
      return refuse('SYMLINK', rel, 'is a symbolic link');
    case 'ENOENT':
      return refuse('CHANGED_DURING_COPY', rel, 'vanished while the submission was copied');
    case 'ENOTDIR':
      return refuse('NOT_DIRECTORY', rel, 'is not a directory');
    case 'EACCES':
    case 'EPERM':
      return refuse('UNREADABLE', rel, `cannot be read: ${errno}`);
    case 'EAGAIN':
    case 'EWOULDBLOCK':
      return refuse('UNREADABLE', rel, 'is held by a lease or lock');
    case 'ENXIO':
    case 'ENODEV':
    case 'EOPNOTSUPP':
      return refuse('NOT_REGULAR_FILE', rel, 'is not a regular file');
    case 'ENAMETOOLONG':
      return refuse('NAME_TOO_LONG', rel, 'has a path that is too long');
    default:
      throw toSystemError(error, `reading ${escapeForDisplay(rel)}`);
  }
}

function walkFailureToRefusal(failure: WalkFailure, components: readonly Buffer[]): Refusal {
  const rel = joinComponents(components.slice(0, failure.index + 1));
  switch (failure.kind) {
    case 'symlink':
      return refuse('SYMLINK', rel, 'is a symbolic link (links on a declared path are always refused)');
    case 'not-directory':
      return refuse('NOT_DIRECTORY', rel, 'is not a directory');
    case 'denied':
      return refuse('UNREADABLE', rel, 'cannot be opened');
    case 'missing':
      return refuse('CHANGED_DURING_COPY', rel, 'vanished while the submission was copied');
    case 'error':
      throw toSystemError(failure.cause, `opening ${escapeForDisplay(rel)}`);
  }
}

function checkInside(ctx: Context, fd: number, rel: Buffer): void {
  let real: Buffer;
  try {
    real = fdRealPath(fd);
  } catch (error) {
    throw sourceFailure(error, rel);
  }
  if (!isInside(real, ctx.rootReal)) {
    throw refuse('ESCAPED_ROOT', rel, `resolved outside the root (to ${escapeForDisplay(real)})`);
  }
}

function checkpoint(ctx: Context): void {
  ctx.scheduler.checkAbort();
  if (performance.now() > ctx.deadline) {
    throw new FileGuardError('TIMED_OUT', `custody ran past ${ctx.options.timeoutMs} ms`);
  }
}

function countEntry(ctx: Context, rel: Buffer): void {
  ctx.totals.entries += 1;
  if (ctx.totals.entries > ctx.options.maxEntries) {
    throw refuse(
      'TOO_MANY_ENTRIES',
      rel,
      `is past the budget: the submission has more than ${ctx.options.maxEntries} entries`,
      true,
    );
  }
}

function checkName(ctx: Context, name: Buffer, rel: Buffer): void {
  if (name.length > ctx.options.maxNameBytes) {
    throw refuse(
      'NAME_TOO_LONG',
      rel,
      `has a name of ${name.length} bytes (limit ${ctx.options.maxNameBytes})`,
    );
  }
  if (rel.length > ctx.options.maxPathBytes) {
    throw refuse(
      'NAME_TOO_LONG',
      rel,
      `has a path of ${rel.length} bytes (limit ${ctx.options.maxPathBytes})`,
    );
  }
}

/** Create the intermediate destination directories of a declared path and return the last one. */
function ensureDestDirs(destRootFd: number, components: readonly Buffer[]): number {
  let current = destRootFd;
  let owned = false;
  for (let index = 0; index < components.length; index += 1) {
    const name = components[index]!;
    const rel = joinComponents(components.slice(0, index + 1));
    try {
      mkdirAt(current, name, 0o700);
    } catch (error) {
      if (errnoOf(error) !== 'EEXIST') {
        if (owned) closeQuietly(current);
        throw destinationFailure(error, rel);
      }
    }
    let next: number;
    try {
      next = openAt(current, name, DEST_DIR_FLAGS);
    } catch (error) {
      if (owned) closeQuietly(current);
      throw destinationFailure(error, rel);
    }
    if (owned) closeQuietly(current);
    current = next;
    owned = true;
  }
  return current;
}

/** Copy one declared path. Returns its kind, or `absent`. Throws Refusal. */
async function copySource(
  ctx: Context,
  rootFd: number,
  destRootFd: number,
  source: Source,
): Promise<'file' | 'directory' | 'absent'> {
  const components = source.components;
  const relAll = joinComponents(components);
  checkName(ctx, components[components.length - 1]!, relAll);
  const parentComponents = components.slice(0, -1);
  const finalName = components[components.length - 1]!;

  // Intermediate components: classified with O_PATH|O_NOFOLLOW and reopened through the
  // checked descriptor. A missing one means the declared path is absent; a link is refused.
  const parent = openDirectoryComponents(rootFd, parentComponents);
  if (!parent.ok) {
    if (parent.failure.kind === 'missing') return 'absent';
    throw walkFailureToRefusal(parent.failure, components);
  }
  const parentFd = parent.fd;
  let destParentFd: number | undefined;
  try {
    checkInside(ctx, parentFd, joinComponents(parentComponents));
    const classified = classifyAt(parentFd, finalName);
    if (!classified.ok) {
      if (classified.errno === 'ENOENT') return 'absent';
      throw sourceFailure(classified.cause, relAll);
    }
    const { pathFd, stats } = classified;
    try {
      if (stats.isSymbolicLink()) {
        throw refuse('SYMLINK', relAll, 'is a symbolic link (links on a declared path are always refused)');
      }
      if (!stats.isDirectory() && !stats.isFile()) {
        throw refuse('NOT_REGULAR_FILE', relAll, `is not a regular file (${describeStats(stats)})`);
      }
      destParentFd = ensureDestDirs(destRootFd, parentComponents);
      const walk: SourceWalk = { source, base: relAll };
      if (stats.isDirectory()) {
        let dirFd: number;
        try {
          dirFd = reopen(pathFd, REOPEN_DIR_FLAGS);
        } catch (error) {
          throw sourceFailure(error, relAll);
        }
        try {
          await copyDirectory(ctx, walk, dirFd, destParentFd, finalName, relAll, 0);
        } finally {
          closeQuietly(dirFd);
        }
        return 'directory';
      }
      let fileFd: number;
      try {
        fileFd = reopen(pathFd, REOPEN_FILE_FLAGS);
      } catch (error) {
        throw sourceFailure(error, relAll);
      }
      try {
        await copyFile(ctx, walk, fileFd, destParentFd, finalName, relAll);
      } finally {
        closeQuietly(fileFd);
      }
      return 'file';
    } finally {
      closeQuietly(pathFd);
    }
  } finally {
    closeQuietly(parentFd);
    if (destParentFd !== destRootFd) closeQuietly(destParentFd);
  }
}

function describeStats(stats: fs.BigIntStats): string {
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSymbolicLink()) return 'a symbolic link';
  if (stats.isDirectory()) return 'a directory';
  return 'an unknown file type';
}

function describeType(type: EntryType): string {
  switch (type) {
    case 'fifo':
      return 'a FIFO';
    case 'socket':
      return 'a socket';
    case 'char-device':
      return 'a character device';
    case 'block-device':
      return 'a block device';
    default:
      return type;
  }
}

/** Copy one regular file already opened (`fd`) to `name` in `destDirFd`. */
async function copyFile(
  ctx: Context,
  walk: SourceWalk,
  fd: number,
  destDirFd: number,
  name: Buffer,
  rel: Buffer,
): Promise<void> {
  checkpoint(ctx);
  countEntry(ctx, rel);
  let before: fs.BigIntStats;
  try {
    before = fs.fstatSync(fd, { bigint: true });
  } catch (error) {
    throw sourceFailure(error, rel);
  }
  // fstat of the open descriptor decides: a FIFO or device swapped in after readdir is refused here.
  if (!before.isFile())
    throw refuse('NOT_REGULAR_FILE', rel, `is not a regular file (${describeStats(before)})`);
  checkInside(ctx, fd, rel);
  const owner = Number(before.uid);
  if (before.nlink > 1n && !(ctx.options.studentUid !== undefined && owner === ctx.options.studentUid)) {
    throw refuse('HARD_LINK', rel, `is a hard link (${before.nlink} links) to a file owned by uid ${owner}`);
  }
  // Sizes are checked on the descriptor's st_size before a single byte is read: a sparse
  // 100 GB file is refused in microseconds.
  const size = Number(before.size);
  if (size > ctx.options.maxFileBytes) {
    throw refuse('FILE_TOO_LARGE', rel, `is too large (${size} bytes > ${ctx.options.maxFileBytes})`);
  }
  if (ctx.totals.bytes + size > ctx.options.maxTotalBytes) {
    throw refuse(
      'TOTAL_TOO_LARGE',
      rel,
      `takes the submission past its total budget (${ctx.totals.bytes + size} bytes > ${ctx.options.maxTotalBytes})`,
      true,
    );
  }
  ctx.totals.bytes += size;

  let destFd: number;
  try {
    destFd = openAt(destDirFd, name, DEST_FILE_FLAGS, 0o600);
  } catch (error) {
    throw destinationFailure(error, rel);
  }
  try {
    if (ctx.fixModes) {
      try {
        fs.fchmodSync(destFd, 0o600);
      } catch (error) {
        throw destinationFailure(error, rel);
      }
    }
    let copied: CopiedData;
    try {
      copied = await copyData(fd, destFd, size, ctx.buffers, () => {
        checkpoint(ctx);
      });
    } catch (error) {
      if (error instanceof CopyIoError) {
        throw error.side === 'source'
          ? sourceFailure(error.cause, rel)
          : destinationFailure(error.cause, rel);
      }
      throw error;
    }
    let after: fs.BigIntStats;
    try {
      after = fs.fstatSync(fd, { bigint: true });
    } catch (error) {
      throw sourceFailure(error, rel);
    }
    if (
      !copied.sizeMatched ||
      after.size !== before.size ||
      after.mtimeNs !== before.mtimeNs ||
      after.ctimeNs !== before.ctimeNs
    ) {
      throw refuse('CHANGED_DURING_COPY', rel, 'changed while it was copied');
    }
    // Magic-number typing runs for every file that is not text, and for every file under a
    // type rule; text without a rule is typed by content alone (text/plain).
    const type =
      walk.source.type !== undefined || !copied.text ? await detectType(copied.head, copied.text) : TEXT_TYPE;
    const violation = policyViolation(walk.source.type, type);
    if (violation !== undefined) throw refuse('WRONG_FILE_TYPE', rel, violation);
    ctx.totals.files += 1;
    ctx.entries.push({
      path: escapeForDisplay(rel),
      rawPath: rel.toString('base64'),
      kind: 'file',
      size,
      sha256: copied.sha256,
      sparse: copied.sparse,
      type,
    });
  } finally {
    closeQuietly(destFd);
  }
  await ctx.scheduler.maybeYield();
}

/** Copy the directory open as `dirFd` to `name` in `destParentFd`, recursively. */
async function copyDirectory(
  ctx: Context,
  walk: SourceWalk,
  dirFd: number,
  destParentFd: number,
  name: Buffer,
  rel: Buffer,
  depth: number,
): Promise<void> {
  checkpoint(ctx);
  countEntry(ctx, rel);
  let stats: fs.BigIntStats;
  try {
    stats = fs.fstatSync(dirFd, { bigint: true });
  } catch (error) {
    throw sourceFailure(error, rel);
  }
  if (!stats.isDirectory()) throw refuse('NOT_DIRECTORY', rel, 'is not a directory');
  checkInside(ctx, dirFd, rel);
  try {
    mkdirAt(destParentFd, name, 0o700);
  } catch (error) {
    throw destinationFailure(error, rel);
  }
  let destFd: number;
  try {
    destFd = openAt(destParentFd, name, DEST_DIR_FLAGS);
    if (ctx.fixModes) fs.fchmodSync(destFd, 0o700);
  } catch (error) {
    throw destinationFailure(error, rel);
  }
  ctx.totals.directories += 1;
  ctx.entries.push({ path: escapeForDisplay(rel), rawPath: rel.toString('base64'), kind: 'directory' });
  try {
    // Stream the listing and stop one past the remaining entry budget: a directory with a
    // million names costs no more than the budget.
    const remaining = Math.max(0, ctx.options.maxEntries - ctx.totals.entries);
    let listing: { entries: DirEntry[]; overflow: boolean };
    try {
      listing = readDirAt(dirFd, remaining);
    } catch (error) {
      throw sourceFailure(error, rel);
    }
    if (listing.overflow) {
      throw refuse(
        'TOO_MANY_ENTRIES',
        rel,
        `is past the budget: the submission has more than ${ctx.options.maxEntries} entries`,
        true,
      );
    }
    const children = listing.entries.sort((a, b) => Buffer.compare(a.name, b.name));
    if (children.length > 0 && depth + 1 > ctx.options.maxDepth) {
      throw refuse(
        'TOO_DEEP',
        childPath(rel, children[0]!.name),
        `is nested deeper than ${ctx.options.maxDepth} levels`,
      );
    }
    for (const child of children) {
      await ctx.scheduler.maybeYield();
      const childRel = childPath(rel, child.name);
      checkName(ctx, child.name, childRel);
      await copyChild(ctx, walk, dirFd, destFd, child.name, child.type, childRel, depth + 1);
    }
  } finally {
    closeQuietly(destFd);
  }
}

/**
 * Open a source descriptor (a failure is the source's, at `rel`), use it, and close it
 * whatever happens.
 */
async function withDescriptor(
  open: () => number,
  rel: Buffer,
  use: (fd: number) => Promise<void>,
): Promise<void> {
  let fd: number;
  try {
    fd = open();
  } catch (error) {
    throw sourceFailure(error, rel);
  }
  try {
    await use(fd);
  } finally {
    closeQuietly(fd);
  }
}

/** Dispatch one directory entry by its readdir type, re-verified on the opened descriptor. */
async function copyChild(
  ctx: Context,
  walk: SourceWalk,
  dirFd: number,
  destDirFd: number,
  name: Buffer,
  type: EntryType,
  rel: Buffer,
  depth: number,
): Promise<void> {
  switch (type) {
    case 'file':
      await withDescriptor(
        () => openAt(dirFd, name, FILE_FLAGS),
        rel,
        (fd) => copyFile(ctx, walk, fd, destDirFd, name, rel),
      );
      return;
    case 'directory': {
      // O_DIRECTORY|O_NOFOLLOW: a link swapped in fails with ENOTDIR; classify it to say why.
      let fd: number;
      try {
        fd = openAt(dirFd, name, DIR_FLAGS);
      } catch (error) {
        if (errnoOf(error) === 'ENOTDIR') {
          await copyChild(ctx, walk, dirFd, destDirFd, name, 'unknown', rel, depth);
          return;
        }
        throw sourceFailure(error, rel);
      }
      try {
        await copyDirectory(ctx, walk, fd, destDirFd, name, rel, depth);
      } finally {
        closeQuietly(fd);
      }
      return;
    }
    case 'symlink': {
      countEntry(ctx, rel);
      if (!walk.source.allowSymlinks) throw refuse('SYMLINK', rel, 'is a symbolic link');
      let target: Buffer;
      try {
        target = readlinkAt(dirFd, name);
      } catch (error) {
        if (errnoOf(error) === 'EINVAL')
          throw refuse('CHANGED_DURING_COPY', rel, 'changed while it was copied');
        throw sourceFailure(error, rel);
      }
      if (!linkStaysInside(walk.base, rel, target)) {
        throw refuse(
          'SYMLINK',
          rel,
          `is a symbolic link pointing outside the submission (to ${escapeForDisplay(target)})`,
        );
      }
      try {
        symlinkAt(target, destDirFd, name);
      } catch (error) {
        throw destinationFailure(error, rel);
      }
      ctx.totals.symlinks += 1;
      ctx.entries.push({
        path: escapeForDisplay(rel),
        rawPath: rel.toString('base64'),
        kind: 'symlink',
        linkTarget: escapeForDisplay(target),
      });
      return;
    }
    case 'unknown': {
      // readdir gave no type (some filesystems) or the entry changed: classify it through an
      // O_PATH descriptor and continue on that very inode.
      const classified = classifyAt(dirFd, name);
      if (!classified.ok) throw sourceFailure(classified.cause, rel);
      try {
        const stats = classified.stats;
        if (stats.isSymbolicLink()) {
          await copyChild(ctx, walk, dirFd, destDirFd, name, 'symlink', rel, depth);
          return;
        }
        if (stats.isDirectory()) {
          await withDescriptor(
            () => reopen(classified.pathFd, REOPEN_DIR_FLAGS),
            rel,
            (fd) => copyDirectory(ctx, walk, fd, destDirFd, name, rel, depth),
          );
          return;
        }
        if (stats.isFile()) {
          await withDescriptor(
            () => reopen(classified.pathFd, REOPEN_FILE_FLAGS),
            rel,
            (fd) => copyFile(ctx, walk, fd, destDirFd, name, rel),
          );
          return;
        }
        countEntry(ctx, rel);
        throw refuse('NOT_REGULAR_FILE', rel, `is not a regular file (${describeStats(stats)})`);
      } finally {
        closeQuietly(classified.pathFd);
      }
    }
    default:
      countEntry(ctx, rel);
      throw refuse('NOT_REGULAR_FILE', rel, `is not a regular file (${describeType(type)})`);
  }
}

/**
 * True when a link at `rel` with text `target` resolves, lexically, inside the declared
 * directory `base`: relative, and never climbing above `base`. Such a link can only name
 * something inside the custody copy, even for a grader that follows links.
 */
export function linkStaysInside(base: Buffer, rel: Buffer, target: Buffer): boolean {
  if (target.length === 0 || target[0] === 0x2f || target.indexOf(0) !== -1) return false;
  const baseDepth = splitComponents(base).length;
  const stack = splitComponents(rel)
    .slice(baseDepth, -1)
    .map((part) => part.toString('latin1'));
  for (const part of splitComponents(target)) {
    const text = part.toString('latin1');
    if (text === '.') continue;
    if (text === '..') {
      if (stack.length === 0) return false;
      stack.pop();
    } else {
      stack.push(text);
    }
  }
  return true;
}
