// Running trusted system binaries (util-linux, e2fsprogs): absolute paths from
// resolveTrustedBinary(), a fixed minimal environment, no shell option, bounded time, and
// failures wrapped into LimitsError at the seam. node:child_process directly (not execa):
// spawning is the slow part of quota setup and teardown, and this is the leanest path.
import { execFile } from 'node:child_process';
import { resolveTrustedBinary } from '@karotte/base';
import type { LimitsErrorCode } from './errors.js';
import { LimitsError } from './errors.js';

/** The environment every binary runs with: nothing inherited from the harness. */
const ENV = Object.freeze({ PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' });

/** Output of a successful run. */
export interface RunOutput {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Run `name` (resolved in the trusted directories) with `args`. Throws `LimitsError(code)`
 * naming the binary and its stderr when it fails or times out, `ABORTED` when aborted.
 */
export function runTrusted(
  name: string,
  args: readonly string[],
  options: { code: LimitsErrorCode; timeoutMs?: number; abortSignal?: AbortSignal | undefined },
): Promise<RunOutput> {
  const file = resolveTrustedBinary(name);
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      {
        env: ENV,
        timeout: options.timeoutMs ?? 60_000,
        killSignal: 'SIGKILL',
        maxBuffer: 1024 * 1024,
        encoding: 'utf8',
        ...(options.abortSignal === undefined ? {} : { signal: options.abortSignal }),
      },
      (error, stdout, stderr) => {
        if (error === null) {
          resolve({ stdout: stdout.trimEnd(), stderr });
          return;
        }
        if (options.abortSignal?.aborted === true) {
          reject(new LimitsError('ABORTED', `${name} was aborted`, { cause: error }));
          return;
        }
        const why = error.killed
          ? 'timed out'
          : `exited ${String(error.code ?? error.signal ?? 'abnormally')}: ${stderr.slice(0, 500).trim()}`;
        reject(
          new LimitsError(options.code, `${name} ${args.join(' ').slice(0, 300)} ${why}`, { cause: error }),
        );
      },
    ).stdin?.end();
  });
}
