import { SystemError, runProgram, toSystemError } from '@karotte/base';

/** True when `child` is `parent` or below it (plain path prefix on `/` boundaries). */
export function isWithin(child: string, parent: string): boolean {
  if (parent === '/') return true;
  return child === parent || child.startsWith(`${parent}/`);
}

/**
 * Run a trusted binary with fixed argv, bounded in time; throws a SystemError on failure.
 * Through `@karotte/base`'s runProgram (a small spawner process forks it, not the harness).
 */
export async function runTrusted(file: string, args: readonly string[], timeoutMs = 10_000): Promise<void> {
  const what = `${file} ${args.join(' ')}`;
  let result;
  try {
    // killGraceMs: settle even if a descendant still holds the output (execFile did too).
    result = await runProgram([file, ...args], { timeoutMs, killGraceMs: 2_000, maxOutputBytes: 64 * 1024 });
  } catch (error) {
    throw toSystemError(error, what);
  }
  if (result.stopped === undefined && result.exitCode === 0) return;
  const how =
    result.stopped ??
    (result.exitCode === null ? `killed by ${result.signal ?? 'a signal'}` : `exited ${result.exitCode}`);
  throw new SystemError(`${what}: ${how} ${result.stderr.toString('utf8').trim()}`.trim());
}
