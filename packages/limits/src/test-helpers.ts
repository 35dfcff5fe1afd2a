// Helpers shared by this package's integration tests (not exported from index.ts).
import { spawn } from 'node:child_process';

/** Outcome of a process run by {@link runBounded}. */
export interface BoundedRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly pid: number;
  readonly timedOut: boolean;
}

/**
 * Run argv and wait for it with a bound: past `timeoutMs` the process is SIGKILLed (by pid)
 * and `timedOut` is set. Output is kept up to 1 MiB per stream.
 */
export function runBounded(argv: readonly string[], timeoutMs: number): Promise<BoundedRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' },
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < 1 << 20) stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 1 << 20) stderr += chunk.toString('utf8');
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, pid: child.pid ?? -1, timedOut });
    });
  });
}

/** argv that drops to `uid` (no groups, no new privileges) and runs `command`. */
export function asUid(uid: number, command: readonly string[]): string[] {
  return [
    '/usr/bin/setpriv',
    '--reuid',
    String(uid),
    '--regid',
    String(uid),
    '--clear-groups',
    '--no-new-privs',
    '--',
    ...command,
  ];
}
