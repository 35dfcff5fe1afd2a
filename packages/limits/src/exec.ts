// Running trusted system binaries (util-linux, e2fsprogs): absolute paths from
// resolveTrustedBinary(), a fixed minimal environment, no shell option, bounded time, and
// failures wrapped into LimitsError at the seam. Through @karotte/base's runProgram: spawning
// is the slow part of quota setup and teardown, and a fork from the harness costs in
// proportion to its memory, on its event loop.
import { resolveTrustedBinary, runProgram } from '@karotte/base';
import type { LimitsErrorCode } from './errors.js';
import { LimitsError } from './errors.js';

/** The environment every binary runs with: nothing inherited from the harness. */
const ENV = Object.freeze({ PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' });

/** Output kept of one run (of stdout, and of stderr); more kills the run. */
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
 * direct child left a script's running step behind, so an aborted quota preparation's
 * `fallocate` could create the image again after the caller had removed it, leaving an image
 * with no record to reclaim it by.
 */
export async function runTrusted(
  name: string,
  args: readonly string[],
  options: { code: LimitsErrorCode; timeoutMs?: number; abortSignal?: AbortSignal | undefined },
): Promise<RunOutput> {
  const file = resolveTrustedBinary(name);
  const what = `${name} ${args.join(' ').slice(0, 300)}`;
  let result;
  try {
    result = await runProgram([file, ...args], {
      env: ENV,
      timeoutMs: options.timeoutMs ?? 60_000,
      processGroup: true,
      maxOutputBytes: MAX_OUTPUT_BYTES,
      onOverflow: 'kill',
      abortSignal: options.abortSignal,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new LimitsError(options.code, `${what} could not start: ${message}`, { cause: error });
  }
  if (result.stopped === 'aborted') throw new LimitsError('ABORTED', `${name} was aborted`);
  const stdout = result.stdout.toString('utf8');
  const stderr = result.stderr.toString('utf8');
  if (result.stopped === undefined && result.exitCode === 0) return { stdout: stdout.trimEnd(), stderr };
  const why =
    result.stopped ??
    `exited ${result.exitCode === null ? (result.signal ?? 'abnormally') : String(result.exitCode)}: ${stderr.slice(0, 500).trim()}`;
  throw new LimitsError(options.code, `${what} ${why}`);
}
