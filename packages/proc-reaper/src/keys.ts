// Kernel keys of a uid. A key outlives every process of its owner while a keyring links it:
// the uid's user keyring lives as long as the host's user namespace, its persistent keyring
// for days after the last process, and a key with "other" permissions can be read by any uid
// that knows its serial. So one episode could hand an answer to a later one through a key.
// After the reap the uid's own keyrings are emptied, as the uid (a keyring is cleared by its
// owner), and the count of keys the uid still owns (/proc/key-users, read by root) proves
// that nothing else of it is left: a key no keyring links is destroyed by the kernel.
import { readFileSync } from 'node:fs';
import { SystemError, isErrno } from '@karotte/base';
import { runCommand } from './ipc.js';
import keysScript from './programs/keys.pl?raw';

/** A uid's line of /proc/key-users. */
export interface KeyUsage {
  /** Keys the uid owns (instantiated or not), keyrings included. */
  readonly keys: number;
  /** Keys and bytes charged to its quota. */
  readonly quotaKeys: number;
  readonly quotaBytes: number;
}

/** Parse /proc/key-users (`<uid>: <usage> <nkeys>/<nikeys> <qnkeys>/<maxkeys> <qnbytes>/<maxbytes>`). */
export function parseKeyUsers(text: string): Map<number, KeyUsage> {
  const out = new Map<number, KeyUsage>();
  for (const line of text.split('\n')) {
    const match = /^\s*(\d+):\s+\d+\s+(\d+)\/\d+\s+(\d+)\/\d+\s+(\d+)\/\d+\s*$/.exec(line);
    if (match === null) continue;
    out.set(Number(match[1]), {
      keys: Number(match[2]),
      quotaKeys: Number(match[3]),
      quotaBytes: Number(match[4]),
    });
  }
  return out;
}

/** What the uid owns now; undefined when it owns no key (or the kernel has no keyrings). */
function keyUsageOf(uid: number): KeyUsage | undefined {
  let text: string;
  try {
    text = readFileSync('/proc/key-users', 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw new SystemError('cannot read /proc/key-users', { cause: error });
  }
  const usage = parseKeyUsers(text).get(uid);
  return usage === undefined || usage.keys === 0 ? undefined : usage;
}

/** keyctl(2)'s number where the sweep knows it; undefined elsewhere. */
export function keyctlSyscallNumber(arch: string): number | undefined {
  return ({ x64: 250, arm64: 219, ia32: 288 } as Record<string, number>)[arch];
}

/** Binaries of the key sweep. */
export interface KeyBinaries {
  readonly setpriv: string;
  readonly perl: string;
}

/** What a key sweep did. */
export interface KeySweep {
  /** The uid's keyrings that were emptied ("user", "user-session", "persistent"). */
  readonly cleared: string[];
  /** Keyrings that could not be emptied, with the reason. */
  readonly failed: string[];
  /** Keys of the uid still alive besides its own (emptied) keyrings. */
  readonly left: number;
}

/** How long the kernel's key collector is given to destroy the unlinked keys. */
const COLLECT_MS = 2000;

/**
 * Empty the uid's keyrings and count what it still owns. Nothing runs when the uid owns no
 * key (the usual case: the default syscall filter refuses the keyring calls).
 */
export async function sweepKeys(binaries: KeyBinaries, uid: number, timeoutMs: number): Promise<KeySweep> {
  if (keyUsageOf(uid) === undefined) return { cleared: [], failed: [], left: 0 };
  const keyctl = keyctlSyscallNumber(process.arch);
  if (keyctl === undefined) {
    return {
      cleared: [],
      failed: [`keyrings cannot be swept on ${process.arch}`],
      left: keyUsageOf(uid)?.keys ?? 0,
    };
  }
  const result = await runCommand(
    [
      binaries.setpriv,
      '--reuid',
      String(uid),
      '--regid',
      String(uid),
      '--clear-groups',
      '--inh-caps=-all',
      '--',
      binaries.perl,
      '-e',
      keysScript,
      '--',
      String(keyctl),
    ],
    timeoutMs,
  );
  if (result.timedOut || result.exitCode !== 0) {
    const why = result.timedOut
      ? `timed out after ${timeoutMs} ms`
      : `exit ${result.exitCode ?? result.signal ?? '?'}: ${result.stderr.trim()}`;
    throw new SystemError(`cannot sweep the kernel keys of uid ${uid}: ${why}`);
  }
  const cleared: string[] = [];
  const failed: string[] = [];
  for (const line of result.stdout.toString('utf8').split('\n')) {
    const [verb, name, ...why] = line.split(' ');
    if (verb === 'cleared' && name !== undefined) cleared.push(name);
    else if (verb === 'failed' && name !== undefined) failed.push(`${name}: ${why.join(' ')}`);
  }
  // The emptied keyrings are keys of the uid themselves; everything else must be collected.
  // The helper's own process keyring goes with the helper, asynchronously.
  const deadline = Date.now() + COLLECT_MS;
  let left = Math.max(0, (keyUsageOf(uid)?.keys ?? 0) - cleared.length);
  while (left > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    left = Math.max(0, (keyUsageOf(uid)?.keys ?? 0) - cleared.length);
  }
  return { cleared, failed, left };
}
