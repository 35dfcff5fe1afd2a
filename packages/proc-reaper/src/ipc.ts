// IPC objects outlive the processes that made them: SysV shared memory, semaphores and
// message queues, and POSIX message queues. Reclaimed by trusted binaries (no compiler, and
// Node has no shmctl/mq_unlink).
import { lstatSync, readFileSync } from 'node:fs';
import { SystemError, isErrno, runProgram, toSystemError } from '@karotte/base';
import mqueueProgram from './programs/mqueue.pl?raw';

/** A SysV IPC kind, as in /proc/sysvipc/<kind>. */
export type SysvKind = 'shm' | 'sem' | 'msg';

/** One SysV object from /proc/sysvipc. */
export interface SysvObject {
  readonly kind: SysvKind;
  readonly id: number;
  /** Creator uid: fixed at creation. The owner (`uid`) can be rewritten with IPC_SET. */
  readonly cuid: number;
  /** Current owner uid. */
  readonly uid: number;
  /** A shared-memory segment already removed but still attached somewhere (SHM_DEST). */
  readonly pendingDestroy: boolean;
}

const ID_COLUMN: Record<SysvKind, string> = { shm: 'shmid', sem: 'semid', msg: 'msqid' };
const SHM_DEST = 0o1000;

/** Parse a /proc/sysvipc table by its header (columns differ between kernels). */
export function parseSysvTable(kind: SysvKind, text: string): SysvObject[] {
  const lines = text.split('\n');
  const header = lines[0]?.trim().split(/\s+/) ?? [];
  const idColumn = header.indexOf(ID_COLUMN[kind]);
  const cuidColumn = header.indexOf('cuid');
  const uidColumn = header.indexOf('uid');
  const permsColumn = header.indexOf('perms');
  if (idColumn < 0 || cuidColumn < 0 || uidColumn < 0 || permsColumn < 0) return [];
  const out: SysvObject[] = [];
  for (const line of lines.slice(1)) {
    const fields = line.trim().split(/\s+/);
    const id = Number(fields[idColumn]);
    const cuid = Number(fields[cuidColumn]);
    const uid = Number(fields[uidColumn]);
    const perms = Number.parseInt(fields[permsColumn] ?? '', 8);
    if (!Number.isInteger(id) || !Number.isInteger(cuid) || !Number.isInteger(uid) || Number.isNaN(perms))
      continue;
    out.push({ kind, id, cuid, uid, pendingDestroy: kind === 'shm' && (perms & SHM_DEST) !== 0 });
  }
  return out;
}

/** SysV objects of every kind created by `uid`, in this process's IPC namespace. */
export function listSysvByCreator(uid: number, procRoot = '/proc'): SysvObject[] {
  const out: SysvObject[] = [];
  for (const kind of ['shm', 'sem', 'msg'] as const) {
    let text: string;
    try {
      text = readFileSync(`${procRoot}/sysvipc/${kind}`, 'latin1');
    } catch (error) {
      if (isErrno(error, 'ENOENT')) continue; // kernel without SysV IPC of this kind
      throw toSystemError(error, `cannot read ${procRoot}/sysvipc/${kind}`);
    }
    for (const object of parseSysvTable(kind, text)) if (object.cuid === uid) out.push(object);
  }
  return out;
}

const IPCRM_FLAG: Record<SysvKind, string> = { shm: '-m', sem: '-s', msg: '-q' };
const IDS_PER_CALL = 500;

/** What a trusted command printed and how it ended. */
export interface CommandResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: Buffer;
  readonly stderr: string;
  readonly timedOut: boolean;
}

const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;
const MAX_STDERR_CHARS = 8192;

/**
 * Run a trusted command with an empty environment, bounded in time and output (through
 * `@karotte/base`'s runProgram: the harness does not fork).
 */
export async function runCommand(argv: readonly string[], timeoutMs: number): Promise<CommandResult> {
  // A command that cannot start is a SystemError naming it (runProgram's).
  const result = await runProgram(argv, { timeoutMs, maxOutputBytes: MAX_OUTPUT_BYTES });
  return {
    exitCode: result.exitCode,
    signal: result.signal,
    stdout: result.stdout,
    stderr: result.stderr.toString('utf8').slice(0, MAX_STDERR_CHARS),
    timedOut: result.stopped === 'timed out',
  };
}

/**
 * Remove SysV objects with `ipcrm` by id (ids, never keys: a key names whatever holds it
 * now). Failures are left for the caller's re-listing to report.
 */
export async function removeSysv(
  ipcrm: string,
  objects: readonly SysvObject[],
  timeoutMs: number,
): Promise<void> {
  const pending = objects.filter((object) => !object.pendingDestroy);
  for (let i = 0; i < pending.length; i += IDS_PER_CALL) {
    const args = pending
      .slice(i, i + IDS_PER_CALL)
      .flatMap((object) => [IPCRM_FLAG[object.kind], String(object.id)]);
    await runCommand([ipcrm, ...args], timeoutMs);
  }
}

/** Binaries for the POSIX message-queue sweep. */
export interface MqueueBinaries {
  readonly perl: string;
}

/**
 * The constant program (programs/mqueue.pl), run by perl as root: it unshares a private mount
 * namespace, mounts a fresh mqueue file system there (it shows every queue of this IPC
 * namespace, whatever is mounted elsewhere), deletes the queues owned by the uid, then lists
 * what is left. NUL-separated; the separator holds a `/`, which no queue name can.
 */
const MQUEUE_PROGRAM: string = mqueueProgram;

/** unshare(2) and mount(2) by architecture (Node.js's `process.arch`). */
function mqueueSyscallNumbers(arch: string): { unshare: number; mount: number } | undefined {
  return (
    {
      x64: { unshare: 272, mount: 165 },
      arm64: { unshare: 97, mount: 40 },
      ia32: { unshare: 310, mount: 21 },
    } as Record<string, { unshare: number; mount: number }>
  )[arch];
}

const LEFT_MARKER = Buffer.from('\0karotte/left\0', 'latin1');

/** What the POSIX message-queue sweep removed and what is left, as raw names. */
export interface MqueueSweep {
  readonly removed: Buffer[];
  readonly left: Buffer[];
}

function splitNames(bytes: Buffer): Buffer[] {
  const names: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < bytes.length; i += 1) {
    if (bytes[i] === 0) {
      if (i > start) names.push(bytes.subarray(start, i));
      start = i + 1;
    }
  }
  if (start < bytes.length) names.push(bytes.subarray(start));
  return names.map((name) => (name[0] === 0x2e && name[1] === 0x2f ? name.subarray(2) : name));
}

/** Root-owned directories that exist on any Linux host, tried in order as the mount point. */
const MQUEUE_MOUNT_POINTS = ['/run', '/tmp', '/mnt', '/var/tmp', '/dev'];

/** The first of {@link MQUEUE_MOUNT_POINTS} that is a real root-owned directory (not a link). */
function pickMountPoint(): string {
  for (const candidate of MQUEUE_MOUNT_POINTS) {
    const stats = lstatSync(candidate, { throwIfNoEntry: false });
    if (stats?.isDirectory() === true && stats.uid === 0) return candidate;
  }
  throw new SystemError(
    `no root-owned directory to mount mqueue on (tried ${MQUEUE_MOUNT_POINTS.join(', ')})`,
  );
}

/**
 * Remove the POSIX message queues owned by `uid` in this IPC namespace. Needs root (a private
 * mount namespace and an mqueue mount). The mqueue filesystem is mounted over an existing
 * root-owned directory INSIDE the throwaway namespace only: nothing is created on the host,
 * so nothing is left behind even if this process is killed halfway.
 */
export async function sweepMqueues(
  binaries: MqueueBinaries,
  uid: number,
  timeoutMs: number,
): Promise<MqueueSweep> {
  const syscalls = mqueueSyscallNumbers(process.arch);
  if (syscalls === undefined) {
    throw new SystemError(`cannot sweep POSIX message queues on ${process.arch}`);
  }
  const result = await runCommand(
    [
      binaries.perl,
      '-e',
      MQUEUE_PROGRAM,
      pickMountPoint(),
      String(uid),
      String(syscalls.unshare),
      String(syscalls.mount),
    ],
    timeoutMs,
  );
  const marker = result.stdout.indexOf(LEFT_MARKER);
  if (result.timedOut || marker < 0) {
    const why = result.timedOut
      ? `timed out after ${timeoutMs} ms`
      : `exit ${result.exitCode ?? result.signal ?? '?'}: ${result.stderr.trim()}`;
    throw new SystemError(`cannot sweep POSIX message queues: ${why}`);
  }
  return {
    removed: splitNames(result.stdout.subarray(0, marker)),
    left: splitNames(result.stdout.subarray(marker + LEFT_MARKER.length)),
  };
}
