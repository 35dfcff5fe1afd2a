// Running trusted system binaries (util-linux, e2fsprogs): absolute paths from
// resolveTrustedBinary(), a fixed minimal environment, no shell option, bounded time, and
// failures wrapped into LimitsError at the seam. node:child_process directly (not execa):
// spawning is the slow part of quota setup and teardown, and this is the leanest path.
import { spawn } from 'node:child_process';
import { resolveTrustedBinary } from '@karotte/base';
import type { LimitsErrorCode } from './errors.js';
import { LimitsError } from './errors.js';

/** The environment every binary runs with: nothing inherited from the harness. */
const ENV = Object.freeze({ PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' });

/** Output kept of one run (stdout and stderr together); more kills the run. */
const MAX_OUTPUT_BYTES = 1024 * 1024;

/** Output of a successful run. */
export interface RunOutput {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Run `name` (resolved in the trusted directories) with `args`. Throws `LimitsError(code)`
 * naming the binary and its stderr when it fails or times out, `ABORTED` when aborted.
 *
 * The binary runs in a process group of its own, and a timeout or an abort kills the whole
 * group, then settles only once every process of it has closed its output: killing just the
 * direct child (what `execFile`'s own `signal` and `timeout` do) left a script's running step
 * behind, so an aborted quota preparation's `fallocate` could create the image again after the
 * caller had removed it, leaving an image with no record to reclaim it by.
 */
export function runTrusted(
  name: string,
  args: readonly string[],
  options: { code: LimitsErrorCode; timeoutMs?: number; abortSignal?: AbortSignal | undefined },
): Promise<RunOutput> {
  const file = resolveTrustedBinary(name);
  return new Promise((resolve, reject) => {
    let stopped: 'aborted' | 'timed out' | 'output too large' | undefined;
    // spawn, not execFile: execFile does not pass `detached` on, and the own process group
    // (detached: setsid) is what lets one kill reach every step of a script.
    const child = spawn(file, args, { env: ENV, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    const stop = (reason: NonNullable<typeof stopped>) => {
      stopped ??= reason;
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is already gone
      }
    };
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_OUTPUT_BYTES) stop('output too large');
      else into.push(chunk);
    };
    child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));
    const timer = setTimeout(() => {
      stop('timed out');
    }, options.timeoutMs ?? 60_000);
    const onAbort = () => {
      stop('aborted');
    };
    if (options.abortSignal?.aborted === true) onAbort();
    else options.abortSignal?.addEventListener('abort', onAbort, { once: true });
    let spawnError: Error | undefined;
    child.on('error', (error) => {
      spawnError = error;
    });
    // 'close' comes after every process holding the pipes (the whole group) has exited.
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      options.abortSignal?.removeEventListener('abort', onAbort);
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (stopped === 'aborted') {
        reject(new LimitsError('ABORTED', `${name} was aborted`, { cause: spawnError }));
        return;
      }
      if (stopped === undefined && spawnError === undefined && code === 0) {
        resolve({ stdout: stdout.trimEnd(), stderr });
        return;
      }
      const why =
        stopped ??
        (spawnError === undefined
          ? `exited ${code === null ? (signal ?? 'abnormally') : String(code)}: ${stderr.slice(0, 500).trim()}`
          : `could not start: ${spawnError.message}`);
      reject(
        new LimitsError(options.code, `${name} ${args.join(' ').slice(0, 300)} ${why}`, {
          cause: spawnError,
        }),
      );
    });
  });
}
