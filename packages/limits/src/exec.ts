// Running trusted system binaries (util-linux, e2fsprogs): absolute paths from
// resolveTrustedBinary(), a fixed minimal environment, no shell, bounded time, and failures
// wrapped into LimitsError at the seam.
import { resolveTrustedBinary } from '@karotte/base';
import { execa } from 'execa';
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
 * naming the binary and its stderr when it fails, times out or is aborted.
 */
export async function runTrusted(
  name: string,
  args: readonly string[],
  options: { code: LimitsErrorCode; timeoutMs?: number; abortSignal?: AbortSignal | undefined },
): Promise<RunOutput> {
  const file = resolveTrustedBinary(name);
  const result = await execa(file, args, {
    reject: false,
    stdin: 'ignore',
    env: ENV,
    extendEnv: false,
    timeout: options.timeoutMs ?? 60_000,
    ...(options.abortSignal === undefined ? {} : { cancelSignal: options.abortSignal }),
    maxBuffer: 1024 * 1024,
    stripFinalNewline: true,
  });
  if (result.isCanceled) {
    throw new LimitsError('ABORTED', `${name} was aborted`, { cause: result });
  }
  if (result.failed) {
    const why = result.timedOut
      ? 'timed out'
      : `exited ${String(result.exitCode ?? result.signal ?? 'abnormally')}: ${result.stderr.slice(0, 500)}`;
    throw new LimitsError(options.code, `${name} ${args.join(' ')} ${why}`, { cause: result });
  }
  return { stdout: result.stdout, stderr: result.stderr };
}
