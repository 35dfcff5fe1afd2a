// reap(): kill everything of the student and PROVE it is gone.
//
// One pass, in this order, and why:
//  1. group.killAll(): the cgroup kill is atomic with respect to fork (v2 cgroup.kill; v1
//     freeze, SIGKILL every member, thaw). It takes the bulk at once. With a uid, a v1 group
//     stays frozen until the pass has its proof (a hold): its killed members cannot run, fork
//     or exit, so their pids name the same killed processes all pass long, and the steps below
//     skip them (thousands of /proc reads less); their exits (for thousands, more work than
//     the rest of the reap) start only at the thaw. At the end of the pass the group must
//     still hold exactly them, or whatever changed is looked at one by one.
//  2. the init of the student's PID namespace: when a PID-namespace init dies the kernel kills
//     every process in the namespace, and the init only finishes dying after they all have.
//  3. a cheap scan of /proc for the uid: student processes in a PID namespace other than ours
//     (a nested `unshare --pid`) are killed here, which collapses their namespaces too.
//  4. the in-cohort kill: a helper that has become the uid runs kill(-1, SIGKILL) repeatedly.
//     The kernel signals every process of the uid under the tasklist lock and a process with
//     SIGKILL pending cannot finish a fork, so fork-and-die relays that no snapshot ever sees
//     are taken too. It is spawned by root from the harness's own cgroup, so a cohort that
//     fills its pids.max cannot keep it from starting.
//  5. a complete /proc sweep by uid (real, effective, saved or fs) that kills whatever it still finds.
// The pass proves emptiness only when the in-cohort kill ran in THIS pass and the complete
// sweep after it found nothing that can run (plus: the group has no member that can run, the
// namespace init is dead, or dying when a uid is swept). "Can run" excludes a process with
// SIGKILL pending: it never returns to user space, and waiting for the kernel to finish
// thousands of exits would cost more than the rest of the reap together. A clean sweep without a kill that ran before it proves nothing: a cohort that keeps
// the helper from running (SIGSTOP, pid exhaustion) may just be between two relay hops.
import { readFileSync } from 'node:fs';
import { setTimeout as sleepFor } from 'node:timers/promises';
import {
  BadArgumentError,
  KarotteError,
  SystemError,
  createMisbehavior,
  escapeForDisplay,
  isDeadState,
  isKillPending,
  isProcessLive,
  isProcessRunnable,
  killPid,
  parseOptions,
  processesOfUid,
  readProcessStat,
  readProcessStatus,
  resolveTrustedBinary,
} from '@karotte/base';
import type { UidWalk } from '@karotte/base';
import type { FrozenHold, KillableGroup } from '@karotte/limits';
import { z } from 'zod';
import { ProcReaperError } from './errors.js';
import { runInCohort } from './in-cohort.js';
import type { HelperOutcome } from './in-cohort.js';
import { assertCanReap } from './privileges.js';
import { assertOwnProcfs, readPidNamespace, scanOwned } from './procfs.js';
import type { OwnedScan } from './procfs.js';
import type { ConfirmedReapRecord, RecordedProcess } from './record.js';

const MAX_UID = 4_294_967_294;
/** Re-walks of an incomplete kill sweep within one pass. */
const MAX_WALKS_PER_PASS = 10;
/** Processes listed in `swept` and `survivors`. */
const MAX_LISTED = 64;

function isKillableGroup(value: unknown): value is KillableGroup {
  if (typeof value !== 'object' || value === null) return false;
  const group = value as Partial<Record<keyof KillableGroup, unknown>>;
  return (
    typeof group.name === 'string' && typeof group.killAll === 'function' && typeof group.pids === 'function'
  );
}

/**
 * Whose processes to reap. At least one field. With `uid`, emptiness is proven by an
 * in-cohort kill followed by a complete /proc sweep; with `group`, the group must also have
 * no live member after its kill; with `pidNamespaceInitPid`, that init must be dead.
 */
export const reapTargetSchema = z
  .object({
    /** The student's uid (never 0). */
    uid: z.number().int().min(0).max(MAX_UID).optional(),
    /** The student's cgroup, from `@karotte/limits` (anything implementing `KillableGroup`). */
    group: z
      .custom<KillableGroup>(isKillableGroup, 'must implement KillableGroup: name, killAll(), pids()')
      .optional(),
    /** Pid (as seen from here) of the init of the student's PID namespace. */
    pidNamespaceInitPid: z.number().int().min(2).max(4_194_304).optional(),
  })
  .strict()
  .refine(
    (target) =>
      target.uid !== undefined || target.group !== undefined || target.pidNamespaceInitPid !== undefined,
    {
      error: 'name at least one of uid, group, pidNamespaceInitPid',
    },
  );

/** Whose processes to reap. */
export type ReapTarget = z.input<typeof reapTargetSchema>;

/** Options of {@link reap}. */
export const reapOptionsSchema = z
  .object({
    /**
     * Give up after this long: the record then carries `UNREAPABLE` misbehavior.
     * @default 30000
     */
    deadlineMs: z.number().int().positive().max(3_600_000).default(30_000),
    /**
     * Pause between two passes.
     * @default 50
     */
    passIntervalMs: z.number().int().nonnegative().max(10_000).default(50),
    /**
     * Bound on one in-cohort helper run. The student can SIGSTOP the helper (same uid); past
     * this bound root SIGKILLs it and the pass does not count.
     * @default 2000
     */
    helperTimeoutMs: z.number().int().positive().max(60_000).default(2_000),
    /**
     * kill(-1, SIGKILL) rounds per helper run (stops early on ESRCH, which Linux returns only
     * when the helper is alone in its PID namespace). On Linux one is enough: the kernel
     * signals every process of the uid under the tasklist lock, and a fork that has not linked
     * its child by then fails on the pending SIGKILL; more rounds only hold that lock against
     * the exits (at 5,000 processes, 100 rounds cost hundreds of milliseconds). gVisor's
     * kill(-1) signals a snapshot, so there the default is 100.
     * @default 1, or 100 under gVisor or when /proc/version does not name Linux
     */
    inCohortRounds: z.number().int().min(1).max(10_000).optional(),
    /**
     * Gid the helper takes (never 0).
     * @default the target uid
     */
    gid: z.number().int().min(1).max(MAX_UID).optional(),
    /** Cancels the reap: it throws `ProcReaperError` `ABORTED` (nothing is confirmed). */
    abortSignal: z.instanceof(AbortSignal).optional(),
    /**
     * Once nothing can run, also wait (within the deadline) until the uid's processes have all
     * exited, zombies aside. A process with SIGKILL pending runs no user code, but the kernel's
     * exit work still writes to its memory (`clear_child_tid`, robust futexes), which can be a
     * shared mapping of a submission file: collect only after the exits. If they do not finish
     * by the deadline the reap is not confirmed (`UNREAPABLE`). With a group, its members must
     * have exited too, and a namespace init must be dead. Needs a uid in the target.
     * @default false
     */
    awaitExit: z.boolean().default(false),
  })
  .strict();

/** Options of {@link reap}. */
export type ReapOptions = z.input<typeof reapOptionsSchema>;
type ParsedOptions = z.output<typeof reapOptionsSchema>;

/** What one look at the given PID-namespace init found. */
export interface InitView {
  /** Start time in clock ticks since boot: the init is the same process while it is unchanged. */
  readonly startTicks: number;
  /** Init (pid 1) of a PID namespace other than ours. */
  readonly isForeignInit: boolean;
  readonly dead: boolean;
  /** SIGKILL pending: on its way out, killing its namespace (it finishes dying after the namespace has). */
  readonly dying: boolean;
}

/** Everything the reap loop touches, injectable so the loop's logic is unit-testable. */
export interface ReapEngine {
  now(): number;
  sleep(ms: number): Promise<void>;
  /** The uid's processes, except the pids in `skip`. */
  walk(uid: number, skip?: ReadonlySet<number>): UidWalk;
  scanOwned(uid: number, skip?: ReadonlySet<number>): OwnedScan;
  kill(pid: number): boolean;
  runInCohort(): Promise<HelperOutcome>;
  inspectInit(pid: number): InitView | undefined;
  /** Alive, zombies aside, and without SIGKILL pending. */
  isRunnable(pid: number): boolean;
  /** Members that have not exited (zombies aside), dying ones included. */
  groupMembers(group: KillableGroup): Promise<number[]>;
  checkAbort(): void;
}

/**
 * Kill every process of the target and prove none is alive.
 *
 * Returns when a pass proves emptiness (`confirmedEmpty: true`), or at the deadline with
 * `confirmedEmpty: false` and an `UNREAPABLE` misbehavior record (score 0). It never
 * returns a silent success.
 *
 * @throws BadArgumentError for invalid options or target, and for uid 0 (kill(-1) as root
 *   would take the host).
 * @throws ProcReaperError `NOT_PRIVILEGED` when not root (or missing CAP_KILL, CAP_SETUID,
 *   CAP_SETGID, or the uid is unmapped), at the first call, before anything is killed;
 *   `HELPER_UNAVAILABLE` when the in-cohort helper cannot run on this host; `ABORTED`.
 */
export async function reap(target: ReapTarget, options: ReapOptions = {}): Promise<ConfirmedReapRecord> {
  const parsedTarget = parseOptions(reapTargetSchema, target, 'reap target');
  const parsed = parseOptions(reapOptionsSchema, options, 'reap options');
  const { uid, group, pidNamespaceInitPid } = parsedTarget;
  if (uid === 0) {
    throw new BadArgumentError('refusing to reap uid 0: kill(-1) as root would kill the whole host', {
      field: 'uid',
    });
  }
  if (pidNamespaceInitPid === process.pid) {
    throw new BadArgumentError('pidNamespaceInitPid is this process', { field: 'pidNamespaceInitPid' });
  }
  const gid = parsed.gid ?? uid;
  assertCanReap(uid, uid === undefined ? undefined : gid);
  assertOwnProcfs();
  const binaries = { setpriv: resolveTrustedBinary('setpriv'), sh: resolveTrustedBinary('sh') };
  const ownPidNamespace = readPidNamespace('self');
  if (ownPidNamespace === undefined) {
    throw new ProcReaperError('PROC_UNAVAILABLE', 'cannot read /proc/self/ns/pid');
  }
  const abortSignal = parsed.abortSignal;
  const helperTarget =
    uid === undefined
      ? undefined
      : { uid, gid: gid ?? uid, rounds: parsed.inCohortRounds ?? defaultInCohortRounds() };
  const engine: ReapEngine = {
    now: () => Date.now(),
    sleep: async (ms) => {
      await sleepFor(ms, undefined, abortSignal === undefined ? {} : { signal: abortSignal }).catch(() => {
        // Aborted: checkAbort() right after turns it into ABORTED.
      });
    },
    walk: (forUid, skip) => processesOfUid(forUid, '/proc', skip),
    scanOwned: (forUid, skip) => scanOwned(forUid, ownPidNamespace, '/proc', skip),
    kill: killPid,
    runInCohort: () => runInCohort(binaries, helperTarget!, parsed.helperTimeoutMs),
    inspectInit: (pid) => inspectInit(pid, ownPidNamespace),
    isRunnable: (pid) => isProcessRunnable(pid),
    groupMembers: async (killable) => (await killable.pids()).filter((pid) => isProcessLive(pid)),
    checkAbort: () => {
      if (abortSignal?.aborted) {
        throw new ProcReaperError('ABORTED', 'reap was aborted; nothing is confirmed', {
          cause: abortSignal.reason,
        });
      }
    },
  };
  return runReap({ uid, group, pidNamespaceInitPid }, parsed, engine);
}

/**
 * The build line gVisor's Sentry reports in /proc/version after its made-up release (4.4,
 * 4.4.0): a fixed string no real kernel build carries, by which gVisor is told from Linux.
 */
const GVISOR_VERSION = /^Linux version \S+ #1 SMP Sun Jan 10 15:06:54 PST 2016/;

/** True when `versionLine` (the text of /proc/version) is gVisor's rather than a real kernel's. */
export function isGvisorVersion(versionLine: string): boolean {
  return GVISOR_VERSION.test(versionLine);
}

let roundsDefault: number | undefined;

/** 1 on a Linux kernel, 100 under gVisor or a kernel that does not say what it is (see `inCohortRounds`). */
function defaultInCohortRounds(): number {
  if (roundsDefault === undefined) {
    let version = '';
    try {
      version = readFileSync('/proc/version', 'latin1');
    } catch {
      // unreadable: treated as an unknown kernel
    }
    // One round only on a kernel that says it is Linux and is not gVisor; anything else
    // (an unreadable /proc/version, another emulator) gets the rounds a snapshot needs.
    roundsDefault = /^Linux version /.test(version) && !isGvisorVersion(version) ? 1 : 100;
  }
  return roundsDefault;
}

function inspectInit(pid: number, ownPidNamespace: string): InitView | undefined {
  const status = readProcessStatus(pid);
  const stat = readProcessStat(pid);
  if (status === undefined || stat === undefined) return undefined;
  const namespace = readPidNamespace(pid);
  if (namespace === undefined) return undefined;
  return {
    startTicks: stat.startTicks,
    isForeignInit: status.nsPids.length >= 2 && status.nsPids.at(-1) === 1 && namespace !== ownPidNamespace,
    dead: isDeadState(status.state),
    dying: isKillPending(status),
  };
}

interface ResolvedTarget {
  readonly uid: number | undefined;
  readonly group: KillableGroup | undefined;
  readonly pidNamespaceInitPid: number | undefined;
}

/** The least time a group call gets, even when the deadline is (nearly) past. */
const GROUP_CALL_MIN_MS = 1_000;

/** `promise`, or a rejection after `ms` (the promise itself keeps running). */
function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new SystemError(`${what} did not settle within ${ms} ms`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => {
    clearTimeout(timer);
  });
}

const TRANSIENT_HELPER_FAILURE = /Resource temporarily unavailable|Cannot allocate memory/;

/** The reap loop, against an engine. Exported for unit tests of its logic. */
export async function runReap(
  target: ResolvedTarget,
  options: Pick<ParsedOptions, 'deadlineMs' | 'passIntervalMs'> & { readonly awaitExit?: boolean },
  engine: ReapEngine,
): Promise<ConfirmedReapRecord> {
  const { uid, group, pidNamespaceInitPid: initPid } = target;
  const start = engine.now();
  const deadline = start + options.deadlineMs;
  const killed = { cgroup: 0, pidns: 0, inCohort: 0, sweep: 0 };
  const inCohort = { runs: 0, confirmed: 0, timedOut: 0, signalled: 0, failed: 0, rounds: 0 };
  const swept: RecordedProcess[] = [];
  const problems = new Set<string>();
  let incompleteWalks = 0;
  let passes = 0;
  let initIdentity: number | undefined;
  let initGone = initPid === undefined;
  let lastWalk: UidWalk | undefined;
  let lastGroupLive: number[] = [];
  const note = (problem: string): void => {
    if (problems.size < 32) problems.add(problem);
  };

  const killInit = (): void => {
    if (initPid === undefined || initGone) return;
    const view = engine.inspectInit(initPid);
    if (view === undefined || view.dead) {
      initGone = true;
      return;
    }
    if (initIdentity === undefined) {
      if (!view.isForeignInit) {
        // Not (or no longer) a namespace init: the namespace is gone and the pid was reused,
        // or the caller named the wrong pid. Either way it is not ours to kill.
        note(`pid ${initPid} is not the init of another PID namespace; it was not killed`);
        initGone = true;
        return;
      }
      initIdentity = view.startTicks;
    } else if (view.startTicks !== initIdentity) {
      initGone = true; // the init died and its pid was reused
      return;
    }
    if (!view.dying && engine.kill(initPid)) killed.pidns += 1;
  };

  const recheckInit = (): void => {
    if (initPid === undefined || initGone) return;
    const view = engine.inspectInit(initPid);
    // With a uid, a dying init is enough: the namespace goes with it, and any process of the
    // uid it has not taken yet is the sweep's (which proves every one dead or dying). Without
    // one, the init must be dead: only then is its whole namespace.
    if (view === undefined || view.dead || view.startTicks !== initIdentity) initGone = true;
    else if (view.dying && uid !== undefined) initGone = true;
  };

  // A group call that never settles (a buggy implementation, a freezer that never freezes)
  // must not hold the reap past its deadline: each call is bounded by what is left of it.
  const bounded = <T>(promise: Promise<T>, what: string): Promise<T> =>
    withTimeout(promise, Math.max(GROUP_CALL_MIN_MS, deadline - engine.now()), what);

  // A group killed by freezing stays frozen (killed, unable to run, fork or exit) while a pass
  // with a uid takes its proof, so thousands of exits do not compete with the sweep; thawed
  // at the end of the pass. Without a uid the proof needs the namespace init dead, which a
  // frozen init never is: no hold then.
  let hold: FrozenHold | undefined;
  const thawHeld = (): void => {
    const held = hold;
    hold = undefined;
    if (held === undefined) return;
    try {
      held.thaw();
    } catch (error) {
      note(`group ${group?.name ?? ''}: thaw failed: ${errorText(error)}`);
    }
  };
  const killGroup = async (asHold: boolean): Promise<void> => {
    if (group === undefined) return;
    const killing = group.killAll(asHold ? { holdFrozen: true } : {});
    try {
      const result = await bounded(killing, 'killAll()');
      killed.cgroup += result.signalled;
      hold = result.hold;
    } catch (error) {
      // A kill that settles after its bound must not leave the group frozen.
      killing.then(
        (late) => late.hold?.thaw(),
        () => undefined,
      );
      note(`group ${group.name}: kill failed: ${errorText(error)}`);
    }
  };
  /**
   * The group's members that can run. Under a hold only what changed since the kill is looked
   * at: a member that joined, or a held pid that left (its process is gone; whatever holds the
   * pid now must not be able to run, or the pass proves nothing).
   */
  const liveMembers = async (
    held: ReadonlySet<number> | undefined,
    killable: KillableGroup,
  ): Promise<number[]> => {
    const members = await killable.pids();
    if (held === undefined) return members.filter((pid) => engine.isRunnable(pid));
    const now = new Set(members);
    const changed = [
      ...[...now].filter((pid) => !held.has(pid)),
      ...[...held].filter((pid) => !now.has(pid)),
    ];
    return changed.filter((pid) => engine.isRunnable(pid));
  };

  const killSweep = (forUid: number, skip?: ReadonlySet<number>): UidWalk => {
    let walk = engine.walk(forUid, skip);
    for (let attempt = 1; !walk.complete && attempt < MAX_WALKS_PER_PASS; attempt += 1) {
      incompleteWalks += 1;
      note(walk.problem ?? 'incomplete /proc walk');
      walk = engine.walk(forUid, skip);
    }
    if (!walk.complete) {
      incompleteWalks += 1;
      note(walk.problem ?? 'incomplete /proc walk');
    }
    for (const proc of walk.alive) {
      // Dying already (SIGKILL pending): another kill changes nothing and is not counted.
      if (proc.dying || !engine.kill(proc.pid)) continue;
      // A process in a nested PID namespace is a namespace kill (it may be that namespace's
      // init, which takes the rest of the namespace with it), whoever finds it.
      if (proc.nested) killed.pidns += 1;
      else killed.sweep += 1;
      if (swept.length < MAX_LISTED) swept.push({ pid: proc.pid, name: escapeForDisplay(proc.name, 64) });
    }
    return walk;
  };

  const runInCohort = async (): Promise<boolean> => {
    inCohort.runs += 1;
    const outcome = await engine.runInCohort();
    switch (outcome.status) {
      case 'confirmed':
        inCohort.confirmed += 1;
        inCohort.rounds += outcome.rounds;
        return true;
      case 'timed_out':
        inCohort.timedOut += 1;
        return false;
      case 'signalled':
        inCohort.signalled += 1;
        return false;
      case 'failed':
        inCohort.failed += 1;
        // A failure with an exit status is the host's, not the student's (a student can only
        // stop or kill the helper, or exhaust pids/memory, which shows as EAGAIN/ENOMEM). An
        // exit 0 without the exact confirmation means something else wrote to its stdout:
        // interference, retried, never an error the student could provoke.
        if (outcome.exitCode !== 0 && !TRANSIENT_HELPER_FAILURE.test(outcome.stderr)) {
          throw new ProcReaperError(
            'HELPER_UNAVAILABLE',
            `the in-cohort helper cannot run on this host (exit ${outcome.exitCode}): ${escapeForDisplay(outcome.stderr.trim(), 300)}`,
          );
        }
        note(`in-cohort helper failed: ${escapeForDisplay(outcome.stderr.trim(), 200)}`);
        return false;
      case 'spawn_failed':
        inCohort.failed += 1;
        if (outcome.errno !== 'EAGAIN' && outcome.errno !== 'ENOMEM') {
          throw new ProcReaperError(
            'HELPER_UNAVAILABLE',
            `cannot start the in-cohort helper: ${outcome.message}`,
          );
        }
        note(`cannot start the in-cohort helper: ${outcome.errno}`);
        return false;
    }
  };

  /**
   * Wait with a growing pause (2 to 50 ms) until nothing of the target is left, zombies aside:
   * no process of the uid, no member of the group, the namespace init dead. How many are left
   * at the deadline.
   */
  const awaitExits = async (forUid: number, proof: UidWalk | undefined): Promise<number> => {
    // The sweep that just proved the pass found no process at all (none dying either): nothing
    // of the uid is left to fork, so that walk is the first look too.
    let reuse = proof !== undefined && proof.complete && proof.alive.length === 0 ? proof : undefined;
    for (let pause = 2; ; pause = Math.min(pause * 2, 50)) {
      const walk = reuse ?? engine.walk(forUid);
      reuse = undefined;
      let left = walk.alive.length + (walk.complete ? 0 : 1);
      if (group !== undefined) {
        try {
          const members = await bounded(engine.groupMembers(group), 'pids()');
          const known = new Set(walk.alive.map((proc) => proc.pid));
          left += members.filter((pid) => !known.has(pid)).length;
        } catch {
          left += 1;
        }
      }
      if (initPid !== undefined && initIdentity !== undefined) {
        const view = engine.inspectInit(initPid);
        if (view !== undefined && !view.dead && view.startTicks === initIdentity) left += 1;
      }
      if (left === 0 || engine.now() >= deadline) return left;
      await engine.sleep(Math.min(pause, deadline - engine.now()));
    }
  };

  for (;;) {
    engine.checkAbort();
    passes += 1;
    let helperRan = false;
    let sweepClean = true;
    let groupEmpty = true;
    await killGroup(uid !== undefined); // settles without throwing; a hold is thawed below
    const skip = new Set(hold?.members);
    const held = hold === undefined ? undefined : skip;
    try {
      killInit();
      if (uid !== undefined) {
        const before = engine.scanOwned(uid, skip);
        const foreign = new Set(before.foreign);
        const seen = new Set<number>();
        for (const pid of before.owned) {
          if (!foreign.has(pid)) seen.add(pid);
          else if (engine.kill(pid)) killed.pidns += 1;
        }
        engine.checkAbort();
        helperRan = await runInCohort();
        const after = killSweep(uid, skip);
        lastWalk = after;
        if (helperRan) {
          const stillAlive = new Set(after.alive.filter((proc) => !proc.dying).map((proc) => proc.pid));
          for (const pid of seen) if (!stillAlive.has(pid)) killed.inCohort += 1;
        }
        // Processes with SIGKILL pending may still be in the kernel's exit work (which, for
        // thousands of them, takes longer than everything else here): none of them runs again,
        // so they do not hold the proof back. The caller waits for their exit where it matters
        // (a uid lease, a cgroup removal).
        sweepClean = after.complete && after.alive.every((proc) => proc.dying);
      }
      if (group !== undefined) {
        try {
          lastGroupLive = await bounded(liveMembers(held, group), 'pids()');
          groupEmpty = lastGroupLive.length === 0;
        } catch (error) {
          note(`group ${group.name}: cannot list members: ${errorText(error)}`);
          groupEmpty = false;
        }
      }
    } finally {
      thawHeld();
    }
    recheckInit();
    const proven = (uid === undefined || (helperRan && sweepClean)) && groupEmpty && initGone;
    const now = engine.now();
    if (proven) {
      const dying = (lastWalk?.alive.length ?? 0) + skip.size;
      // A sweep that skipped the held members saw only part of the uid: looked at again.
      const proof = skip.size === 0 ? lastWalk : undefined;
      const left = options.awaitExit === true && uid !== undefined ? await awaitExits(uid, proof) : 0;
      const end = engine.now();
      return {
        tier: 'confirmed',
        target: describeTarget(target),
        confirmedEmpty: left === 0,
        killed,
        dying: left === 0 ? dying : left,
        passes,
        inCohort,
        incompleteWalks,
        swept,
        startedAt: new Date(start).toISOString(),
        confirmedAt: left === 0 ? new Date(now).toISOString() : null,
        durationMs: end - start,
        survivors: [],
        problems: [...problems],
        misbehavior:
          left === 0
            ? []
            : [
                createMisbehavior(
                  'UNREAPABLE',
                  `Failed to see every process of uid ${uid} exit within ${options.deadlineMs} ms: ${left} with SIGKILL pending were still exiting, and collecting before the kernel is done with them is not safe`,
                ),
              ],
      };
    }
    if (now >= deadline) break;
    await engine.sleep(Math.min(options.passIntervalMs, deadline - now));
  }

  // Deadline: one last kill of everything visible, then report what is still alive.
  await killGroup(false);
  killInit();
  const survivors: RecordedProcess[] = [];
  if (uid !== undefined) {
    const last = killSweep(uid);
    lastWalk = last;
    for (const proc of last.alive) {
      if (!proc.dying && survivors.length < MAX_LISTED)
        survivors.push({ pid: proc.pid, name: escapeForDisplay(proc.name, 64) });
    }
  }
  for (const pid of lastGroupLive) {
    if (survivors.length < MAX_LISTED && !survivors.some((s) => s.pid === pid))
      survivors.push({ pid, name: '' });
  }
  const end = engine.now();
  const reasons: string[] = [];
  const who = uid === undefined ? 'the target' : `uid ${uid}`;
  if (uid !== undefined && inCohort.confirmed === 0) {
    reasons.push(
      `the in-cohort kill never ran (${inCohort.runs} attempts: ${inCohort.timedOut} timed out, ` +
        `${inCohort.signalled} killed by a signal, ${inCohort.failed} failed), so a clean sweep proves nothing`,
    );
  }
  if (survivors.length > 0) {
    reasons.push(
      `processes were still alive: ${survivors
        .slice(0, 8)
        .map((s) => (s.name === '' ? String(s.pid) : `${s.pid} (${s.name})`))
        .join(', ')}`,
    );
  }
  if (lastWalk !== undefined && !lastWalk.complete) reasons.push('/proc could not be walked completely');
  if (!initGone) reasons.push(`the PID-namespace init ${initPid} was still alive`);
  if (reasons.length === 0) reasons.push('no pass proved that nothing was alive');
  return {
    tier: 'confirmed',
    target: describeTarget(target),
    confirmedEmpty: false,
    killed,
    dying: lastWalk?.alive.filter((proc) => proc.dying).length ?? 0,
    passes,
    inCohort,
    incompleteWalks,
    swept,
    startedAt: new Date(start).toISOString(),
    confirmedAt: null,
    durationMs: end - start,
    survivors,
    problems: [...problems],
    misbehavior: [
      createMisbehavior(
        'UNREAPABLE',
        `Failed to reap every process of ${who} within ${options.deadlineMs} ms: ${reasons.join('; ')}`,
      ),
    ],
  };
}

function describeTarget(target: ResolvedTarget): ConfirmedReapRecord['target'] {
  return {
    uid: target.uid ?? null,
    group: target.group?.name ?? null,
    pidNamespaceInitPid: target.pidNamespaceInitPid ?? null,
  };
}

function errorText(error: unknown): string {
  if (KarotteError.isInstance(error)) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
