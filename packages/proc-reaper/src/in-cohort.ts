// The in-cohort kill: a helper that becomes the student uid and calls kill(-1, SIGKILL).
//
// Why from inside the cohort: kill(-1) is delivered by the kernel under the tasklist lock to
// every process the caller may signal, and a process with SIGKILL pending cannot complete a
// fork. So one kill(-1) as the student takes the whole cohort at once, including fork-and-die
// relays that no /proc snapshot ever catches. As root, kill(-1) would take the whole host:
// the helper must have the student's uid and nothing else.
//
// No compiler is assumed, so the helper is trusted binaries only: `setpriv` (util-linux)
// drops to the uid, then `/bin/sh` runs a constant loop of its builtin `kill -9 -1`.
import { spawn } from 'node:child_process';
import inCohortScript from './programs/in-cohort.sh?raw';

/** A constant script (programs/in-cohort.sh): all variable data is a positional argument ($1 = rounds). */
export const IN_COHORT_SCRIPT: string = inCohortScript;

const CONFIRMATION = /^karotte-in-cohort (\d+)\n$/;

/** Outcome of one helper run. Only `confirmed` means kill(-1) ran in this pass. */
export type HelperOutcome =
  | { readonly status: 'confirmed'; readonly rounds: number }
  | { readonly status: 'timed_out' }
  | { readonly status: 'signalled'; readonly signal: string }
  | { readonly status: 'failed'; readonly exitCode: number; readonly stderr: string }
  | { readonly status: 'spawn_failed'; readonly errno: string; readonly message: string };

export interface InCohortBinaries {
  readonly setpriv: string;
  readonly sh: string;
}

/**
 * Argv of the helper. `setpriv` runs as root from the harness's own cgroup (so a cohort that
 * fills its pids.max cannot stop it from starting), sets real, effective and saved uid and
 * gid, clears supplementary groups and sets no_new_privs.
 *
 * It also keeps one harmless capability, CAP_WAKE_ALARM, as an ambient capability. Why: after
 * `execve` of a world-readable `/bin/sh` the helper is "dumpable", and a process of the same
 * uid could ptrace it and skip its kill(-1) while letting it print the confirmation. The
 * kernel refuses ptrace (and /proc/<pid>/mem, environ) when the target holds a permitted
 * capability the tracer lacks. CAP_WAKE_ALARM only allows arming wake-from-suspend timers;
 * it never widens whom kill(-1) reaches (that is CAP_KILL, which the helper does not hold).
 * The student can still SIGSTOP or SIGKILL the helper (signal permission is by uid): the
 * caller bounds the wait and kills it from outside.
 */
export function inCohortArgv(binaries: InCohortBinaries, uid: number, gid: number, rounds: number): string[] {
  return [
    binaries.setpriv,
    '--reuid',
    String(uid),
    '--regid',
    String(gid),
    '--clear-groups',
    '--no-new-privs',
    '--inh-caps=-all,+wake_alarm',
    '--ambient-caps=-all,+wake_alarm',
    '--',
    binaries.sh,
    '-c',
    IN_COHORT_SCRIPT,
    'karotte-in-cohort',
    String(rounds),
  ];
}

const MAX_CAPTURE_BYTES = 4096;
/** After SIGKILL from outside, how long to wait for the kernel to report the helper's exit. */
const KILL_GRACE_MS = 2000;

/**
 * Run a helper argv with a bounded wait. Resolves with the outcome; never rejects and never
 * waits longer than `timeoutMs + KILL_GRACE_MS`. The helper gets an empty environment (it
 * needs none and must not see the harness's), no stdin, and its own piped stdout/stderr.
 */
export function runHelper(argv: readonly string[], timeoutMs: number): Promise<HelperOutcome> {
  const [file, ...args] = argv;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: HelperOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      resolve(outcome);
    };
    let timedOut = false;
    let graceTimer: NodeJS.Timeout | undefined;
    let stdout = '';
    let stderr = '';
    const child = spawn(file!, args, { env: {}, stdio: ['ignore', 'pipe', 'pipe'], cwd: '/' });
    child.stdout.setEncoding('latin1');
    child.stderr.setEncoding('latin1');
    child.stdout.on('data', (chunk: string) => {
      if (stdout.length < MAX_CAPTURE_BYTES) stdout += chunk;
    });
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < MAX_CAPTURE_BYTES) stderr += chunk;
    });
    // Why SIGKILL from outside: the helper runs as the student, so the student may SIGSTOP
    // it (or it may be starved); root ends it after the bound whatever its state.
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
      graceTimer = setTimeout(() => {
        finish({ status: 'timed_out' });
      }, KILL_GRACE_MS);
    }, timeoutMs);
    child.on('error', (error: NodeJS.ErrnoException) => {
      finish({ status: 'spawn_failed', errno: error.code ?? 'UNKNOWN', message: error.message });
    });
    child.on('close', (code, signal) => {
      if (timedOut) {
        finish({ status: 'timed_out' });
        return;
      }
      if (signal !== null) {
        finish({ status: 'signalled', signal });
        return;
      }
      const match = CONFIRMATION.exec(stdout);
      if (code === 0 && match !== null) {
        finish({ status: 'confirmed', rounds: Number(match[1]) });
        return;
      }
      finish({ status: 'failed', exitCode: code ?? -1, stderr: stderr.slice(0, 512) });
    });
  });
}
