// The in-cohort kill: a helper that becomes the student uid and calls kill(-1, SIGKILL).
//
// Why from inside the cohort: kill(-1) is delivered by the kernel under the tasklist lock to
// every process the caller may signal, and a process with SIGKILL pending cannot complete a
// fork. So one kill(-1) as the student takes the whole cohort at once, including fork-and-die
// relays that no /proc snapshot ever catches. As root, kill(-1) would take the whole host:
// the helper must have the student's uid and nothing else.
//
// No compiler is assumed. The helper is a fork of @karotte/base's spawner process (Perl), which
// becomes the uid and calls kill(-1) itself: no program starts, so it costs a fork, not two
// execs. Without the spawner (no trusted perl), trusted binaries: `setpriv` (util-linux) drops to
// the uid, then `/bin/sh` runs a constant loop of its builtin `kill -9 -1`.
import { SystemError, killAsUid, runProgram } from '@karotte/base';
import type { ProgramResult } from '@karotte/base';
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
 * The in-cohort kill as `uid`/`gid`, `rounds` kill(-1) calls at most, with a bounded wait: in a
 * fork of the spawner process, or (no spawner) as the argv of {@link inCohortArgv}. Resolves
 * with the outcome; never rejects and never waits longer than `timeoutMs + KILL_GRACE_MS`.
 */
export async function runInCohort(
  binaries: InCohortBinaries,
  target: { readonly uid: number; readonly gid: number; readonly rounds: number },
  timeoutMs: number,
): Promise<HelperOutcome> {
  const outcome = await outcomeOf(
    () => killAsUid(target, { timeoutMs, killGraceMs: KILL_GRACE_MS, maxOutputBytes: MAX_CAPTURE_BYTES }),
    FORKED_CONFIRMATION,
  );
  if (outcome.status !== 'spawn_failed' || outcome.errno !== 'ENOSYS') return outcome;
  return runHelper(inCohortArgv(binaries, target.uid, target.gid, target.rounds), timeoutMs);
}

/** What the spawner's fork prints: the kill(-1) calls that signalled something. */
const FORKED_CONFIRMATION = /^(\d+)\n$/;

/**
 * Run a helper argv with a bounded wait. Resolves with the outcome; never rejects and never
 * waits longer than `timeoutMs + KILL_GRACE_MS`. The helper gets an empty environment (it
 * needs none and must not see the harness's), stdin /dev/null, and its own stdout and stderr
 * pipes. It is started through `@karotte/base`'s runProgram (a small spawner process forks it,
 * not the harness), from the harness's own cgroup either way.
 *
 * Why SIGKILL from outside after `timeoutMs`: the helper runs as the student, so the student
 * may SIGSTOP it (or it may be starved); root ends it after the bound whatever its state.
 */
export function runHelper(argv: readonly string[], timeoutMs: number): Promise<HelperOutcome> {
  return outcomeOf(
    () => runProgram(argv, { timeoutMs, killGraceMs: KILL_GRACE_MS, maxOutputBytes: MAX_CAPTURE_BYTES }),
    CONFIRMATION,
  );
}

async function outcomeOf(start: () => Promise<ProgramResult>, confirmation: RegExp): Promise<HelperOutcome> {
  let result;
  try {
    result = await start();
  } catch (error) {
    // A SystemError without an errno: the spawner process died while the helper ran (killed
    // with it, or not even started). This pass does not count; the next one starts a new
    // spawner. Anything else is a start that failed (its errno) or a bad argv (UNKNOWN).
    if (SystemError.isInstance(error) && error.errno === undefined)
      return { status: 'signalled', signal: 'SIGKILL' };
    return {
      status: 'spawn_failed',
      errno: (SystemError.isInstance(error) ? error.errno : undefined) ?? 'UNKNOWN',
      message: error instanceof Error ? error.message : String(error),
    };
  }
  if (result.stopped !== undefined) return { status: 'timed_out' };
  if (result.signal !== null) return { status: 'signalled', signal: result.signal };
  const stdout = result.stdout.toString('latin1');
  const match = confirmation.exec(stdout);
  if (result.exitCode === 0 && match !== null) return { status: 'confirmed', rounds: Number(match[1]) };
  return {
    status: 'failed',
    exitCode: result.exitCode ?? -1,
    stderr: result.stderr.toString('latin1').slice(0, 512),
  };
}
