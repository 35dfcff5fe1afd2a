// What the student is told when its world was rebuilt, and the result of a command no shell could run.
import type { ExecResult } from './shell.js';

/** Told to the student with the first result after its world was rebuilt. */
export const RESTART_NOTICE =
  'The sandbox was restarted before this command: every process of it had been stopped (between steps, by a limit such as memory, or by a restart). Files in the working directory are kept; the shell, the current directory, variables, background jobs, /tmp and /dev/shm are new.';

/** Told to the student when its world was replaced because no shell could start in it. */
export const NO_SHELL_NOTICE =
  'The sandbox was restarted before this command: no shell could start in it (its memory was full, for example with files in /tmp or /dev/shm, which count against the memory limit). Files in the working directory are kept; the shell, the current directory, variables, background jobs, /tmp and /dev/shm are new.';

/** The result when not even a fresh world could start a shell (the limits leave no room for one). */
export function notStarted(durationMs: number): ExecResult {
  return {
    stdout: '',
    stderr: '',
    exitCode: null,
    timedOut: false,
    aborted: false,
    stdoutTruncated: false,
    stderrTruncated: false,
    stdoutBytes: 0,
    stderrBytes: 0,
    durationMs: Math.round(durationMs),
    restarted: true,
    notice: 'The command did not run: no shell could start in the sandbox, even after restarting it twice.',
  };
}
