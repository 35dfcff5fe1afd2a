// Unit tests of the reap loop's logic against a scripted engine (no root, no processes):
// what counts as proof, the pid-exhaustion hole, incomplete walks, the order of the steps.
// The same loop runs against real processes in reap.integration.test.ts.
import type { GroupKillOptions, GroupKillResult, KillableGroup } from '@karotte/limits';
import { describe, expect, it } from 'vitest';
import { ProcReaperError } from './errors.js';
import type { HelperOutcome } from './in-cohort.js';
import type { UidProcess, UidWalk } from '@karotte/base';
import type { OwnedScan } from './procfs.js';
import { isGvisorVersion, reap, runReap } from './reap.js';
import type { InitView, ReapEngine } from './reap.js';
import { confirmedReapRecordSchema, reapRecordSchema } from './record.js';

const OPTIONS = { deadlineMs: 1_000, passIntervalMs: 50 };

interface Script {
  /** One helper outcome per run; the last repeats. */
  helper?: HelperOutcome[];
  /** Kill-sweep walk results in order; the last repeats. */
  walks?: UidWalk[];
  /** Pre-scan results in order; the last repeats. */
  scans?: OwnedScan[];
  init?: (InitView | undefined)[];
  /** Pids isRunnable() says can run. */
  runnable?: number[];
}

function live(...pids: number[]): UidProcess[] {
  return pids.map((pid) => ({ pid, name: `p${pid}`, state: 'S', nested: false, dying: false }));
}

const CLEAN: UidWalk = { alive: [], complete: true, vanished: 0 };
const CONFIRMED: HelperOutcome = { status: 'confirmed', rounds: 100 };

function fakeEngine(script: Script) {
  let clock = 0;
  const log: string[] = [];
  const killedPids: number[] = [];
  let helperCalls = 0;
  let walkCalls = 0;
  let scanCalls = 0;
  let initCalls = 0;
  const skipped: (number[] | undefined)[] = [];
  const pick = <T>(list: T[] | undefined, index: number, fallback: T): T =>
    list === undefined || list.length === 0 ? fallback : (list[Math.min(index, list.length - 1)] ?? fallback);
  const engine: ReapEngine = {
    now: () => clock,
    sleep: (ms) => {
      clock += ms;
      log.push('sleep');
      return Promise.resolve();
    },
    walk: (_uid, skip) => {
      skipped.push(skip === undefined ? undefined : [...skip]);
      log.push('walk');
      clock += 1;
      return pick(script.walks, walkCalls++, CLEAN);
    },
    scanOwned: (_uid, skip) => {
      skipped.push(skip === undefined ? undefined : [...skip]);
      log.push('scan');
      return pick(script.scans, scanCalls++, { owned: [], foreign: [] });
    },
    kill: (pid) => {
      log.push(`kill ${pid}`);
      killedPids.push(pid);
      return true;
    },
    runInCohort: () => {
      log.push('helper');
      clock += 5;
      return Promise.resolve(pick(script.helper, helperCalls++, CONFIRMED));
    },
    inspectInit: () => pick(script.init, initCalls++, undefined),
    isRunnable: (pid) => {
      log.push(`runnable? ${pid}`);
      return script.runnable?.includes(pid) ?? false;
    },
    groupMembers: () => Promise.resolve([]),
    checkAbort: () => undefined,
  };
  return { engine, log, killedPids, skipped };
}

function fakeGroup(log: string[], fail = false, members: number[][] = []): KillableGroup {
  let reads = 0;
  return {
    name: 'karotte-fake',
    killAll: (): Promise<GroupKillResult> => {
      log.push('group-kill');
      return fail
        ? Promise.reject(new Error('freezer did not freeze'))
        : Promise.resolve({ mechanism: 'freeze-kill-thaw', signalled: 3 });
    },
    pids: () => {
      log.push('group-members');
      return Promise.resolve(members[Math.min(reads++, members.length - 1)] ?? []);
    },
  };
}

describe('runReap', () => {
  it('confirms in one pass when the in-cohort kill ran and the complete sweep after it is empty', async () => {
    const { engine, log } = fakeEngine({});
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 1, misbehavior: [], tier: 'confirmed' });
    expect(log).toEqual(['scan', 'helper', 'walk']);
    expect(confirmedReapRecordSchema.parse(JSON.parse(JSON.stringify(record)))).toEqual(record);
  });

  it('never succeeds when the helper never ran, however clean the sweeps (the pid-exhaustion hole)', async () => {
    const { engine } = fakeEngine({ helper: [{ status: 'timed_out' }] });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record.confirmedEmpty).toBe(false);
    expect(record.confirmedAt).toBeNull();
    expect(record.inCohort.timedOut).toBe(record.passes);
    expect(record.misbehavior).toHaveLength(1);
    expect(record.misbehavior[0]!.code).toBe('UNREAPABLE');
    expect(record.misbehavior[0]!.message).toMatch(/in-cohort kill never ran.*proves nothing/);
  });

  it('needs the in-cohort kill in the SAME pass as the clean sweep', async () => {
    // Pass 1: helper ran, but the sweep still found (and killed) pid 7.
    // Pass 2: the sweep is clean, but the student stopped the helper: not proof.
    // Pass 3: helper ran and the sweep is clean: proof.
    const { engine } = fakeEngine({
      helper: [CONFIRMED, { status: 'signalled', signal: 'SIGKILL' }, CONFIRMED],
      walks: [{ alive: live(7), complete: true, vanished: 0 }, CLEAN],
    });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 3 });
    expect(record.killed.sweep).toBe(1);
    expect(record.swept).toEqual([{ pid: 7, name: 'p7' }]);
    expect(record.inCohort).toMatchObject({ runs: 3, confirmed: 2, signalled: 1 });
  });

  it('never treats an incomplete walk as clean, even when it lists nothing', async () => {
    const { engine } = fakeEngine({
      walks: [{ alive: [], complete: false, vanished: 0, problem: 'EMFILE' }],
    });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record.confirmedEmpty).toBe(false);
    expect(record.incompleteWalks).toBeGreaterThan(10);
    expect(record.misbehavior[0]!.message).toMatch(/could not be walked completely/);
    expect(record.problems).toContain('EMFILE');
  });

  it('re-walks an incomplete kill sweep within the pass and proves on the complete one', async () => {
    const { engine, log } = fakeEngine({
      walks: [{ alive: [], complete: false, vanished: 0 }, CLEAN],
    });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 1, incompleteWalks: 1 });
    expect(log).toEqual(['scan', 'helper', 'walk', 'walk']);
  });

  it('kills the group first, then the namespace init, then walks, runs the helper and sweeps', async () => {
    const { engine, log } = fakeEngine({
      init: [
        { startTicks: 9, isForeignInit: true, dead: false, dying: false },
        { startTicks: 9, isForeignInit: true, dead: true, dying: false },
      ],
    });
    const group = fakeGroup(log);
    const record = await runReap({ uid: 5000, group, pidNamespaceInitPid: 4242 }, OPTIONS, engine);
    expect(log).toEqual(['group-kill', 'kill 4242', 'scan', 'helper', 'walk', 'group-members']);
    expect(record).toMatchObject({
      confirmedEmpty: true,
      killed: { cgroup: 3, pidns: 1, inCohort: 0, sweep: 0 },
      target: { uid: 5000, group: 'karotte-fake', pidNamespaceInitPid: 4242 },
    });
  });

  it('waits until the group has no live member', async () => {
    const { engine } = fakeEngine({ runnable: [11, 12] });
    const log: string[] = [];
    const record = await runReap(
      { uid: 5000, group: fakeGroup(log, false, [[11, 12], [12], []]), pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 3 });
    expect(log.filter((entry) => entry === 'group-kill')).toHaveLength(3);
  });

  it('records a failing group kill as a problem; emptiness is still what decides', async () => {
    const { engine } = fakeEngine({});
    const record = await runReap(
      { uid: 5000, group: fakeGroup([], true), pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record.confirmedEmpty).toBe(true);
    expect(record.problems.join()).toMatch(/freezer did not freeze/);
  });

  it('bounds a group kill that never settles and goes on', async () => {
    const { engine } = fakeEngine({});
    const hanging: KillableGroup = {
      name: 'karotte-hanging',
      killAll: () => new Promise<GroupKillResult>(() => undefined),
      pids: () => Promise.resolve([]),
    };
    const record = await runReap(
      { uid: 5000, group: hanging, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record.confirmedEmpty).toBe(true);
    expect(record.problems.join()).toMatch(/killAll\(\) did not settle/);
  });

  it('holds a frozen group through each pass with a uid and thaws it before sleeping or returning', async () => {
    // Pass 1: the sweep finds pid 7 alive: not proven. Pass 2: proven.
    const { engine, log, skipped } = fakeEngine({
      walks: [{ alive: live(7), complete: true, vanished: 0 }, CLEAN],
    });
    const asked: (GroupKillOptions | undefined)[] = [];
    const holding: KillableGroup = {
      name: 'karotte-holding',
      killAll: (options) => {
        asked.push(options);
        log.push('group-kill');
        return Promise.resolve({
          mechanism: 'freeze-kill-thaw',
          signalled: 3,
          hold: {
            members: [11, 12, 13],
            thaw: () => {
              log.push('thaw');
            },
          },
        });
      },
      pids: () => {
        log.push('pids');
        return Promise.resolve([11, 12, 13]);
      },
    };
    const record = await runReap(
      { uid: 5000, group: holding, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 2, killed: { cgroup: 6 }, dying: 3 });
    expect(asked).toEqual([{ holdFrozen: true }, { holdFrozen: true }]);
    // The held members are neither scanned nor swept nor read one by one: the group still
    // holds exactly them, so nothing changed.
    const pass = ['group-kill', 'scan', 'helper', 'walk', 'kill 7', 'pids', 'thaw'];
    expect(log).toEqual([...pass, 'sleep', ...pass.filter((step) => step !== 'kill 7')]);
    expect(skipped).toEqual(Array(4).fill([11, 12, 13]));
  });

  it('under a hold, looks one by one at what changed: a member that joined or a held pid that left', async () => {
    // Pass 1: 14 joined and can run, 12 left and its pid now holds a runnable process: not
    // proven. Pass 2: the group holds exactly what was killed.
    const { engine, log } = fakeEngine({ runnable: [14, 12] });
    const members = [
      [11, 12, 13],
      [11, 13],
    ];
    const now = [
      [11, 13, 14],
      [11, 13],
    ];
    let kills = 0;
    let reads = 0;
    const holding: KillableGroup = {
      name: 'karotte-changed',
      killAll: () => {
        const pass = kills++;
        return Promise.resolve({
          mechanism: 'freeze-kill-thaw',
          signalled: members[pass]!.length,
          hold: { members: members[pass]!, thaw: () => undefined },
        });
      },
      pids: () => Promise.resolve(now[Math.min(reads++, 1)]!),
    };
    const record = await runReap(
      { uid: 5000, group: holding, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 2 });
    expect(log.filter((step) => step.startsWith('runnable?'))).toEqual(['runnable? 14', 'runnable? 12']);
  });

  it('asks for no hold without a uid: the proof then needs the namespace init dead, which a frozen one never is', async () => {
    const { engine } = fakeEngine({ init: [undefined] });
    const asked: (GroupKillOptions | undefined)[] = [];
    const group: KillableGroup = {
      name: 'karotte-nohold',
      killAll: (options) => {
        asked.push(options);
        return Promise.resolve({ mechanism: 'freeze-kill-thaw', signalled: 0 });
      },
      pids: () => Promise.resolve([]),
    };
    const record = await runReap({ uid: undefined, group, pidNamespaceInitPid: 4242 }, OPTIONS, engine);
    expect(record.confirmedEmpty).toBe(true);
    expect(asked).toEqual([{}]);
  });

  it('thaws a held group whose kill settled only after its bound', async () => {
    const { engine } = fakeEngine({});
    let thawed = 0;
    const late: KillableGroup = {
      name: 'karotte-late',
      killAll: () =>
        new Promise<GroupKillResult>((resolve) => {
          setTimeout(() => {
            resolve({
              mechanism: 'freeze-kill-thaw',
              signalled: 1,
              hold: {
                members: [5],
                thaw: () => {
                  thawed += 1;
                },
              },
            });
          }, 1_200);
        }),
      pids: () => Promise.resolve([]),
    };
    const record = await runReap({ uid: 5000, group: late, pidNamespaceInitPid: undefined }, OPTIONS, engine);
    expect(record.problems.join()).toMatch(/killAll\(\) did not settle/);
    expect(thawed).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(thawed).toBe(1);
  });

  it('kills student processes in a foreign PID namespace before the helper, as pidns kills', async () => {
    const { engine, killedPids, log } = fakeEngine({ scans: [{ owned: [70, 71], foreign: [70] }] });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(killedPids).toEqual([70]);
    expect(log.indexOf('kill 70')).toBeLessThan(log.indexOf('helper'));
    expect(record.killed).toEqual({ cgroup: 0, pidns: 1, inCohort: 1, sweep: 0 });
  });

  it('counts a nested-namespace process that only the sweep found as a pidns kill', async () => {
    const { engine } = fakeEngine({
      walks: [
        {
          alive: [{ pid: 80, name: 'init', state: 'S', nested: true, dying: false }],
          complete: true,
          vanished: 0,
        },
        CLEAN,
      ],
    });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 2, killed: { pidns: 1, sweep: 0 } });
  });

  it('confirms while killed processes are still exiting, without killing or counting them again, and says how many', async () => {
    const dying: UidProcess[] = [90, 91].map((pid) => ({
      pid,
      name: `p${pid}`,
      state: 'R',
      nested: false,
      dying: true,
    }));
    const { engine, killedPids } = fakeEngine({
      scans: [{ owned: [90, 91], foreign: [] }],
      walks: [{ alive: dying, complete: true, vanished: 0 }],
    });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 1, dying: 2 });
    expect(record.killed).toEqual({ cgroup: 0, pidns: 0, inCohort: 2, sweep: 0 });
    expect(killedPids).toEqual([]);
    expect(confirmedReapRecordSchema.parse(JSON.parse(JSON.stringify(record)))).toEqual(record);
  });

  it('with awaitExit, waits for dying processes to exit before it confirms, and refuses at the deadline if they do not', async () => {
    const dying: UidProcess[] = [{ pid: 90, name: 'p90', state: 'R', nested: false, dying: true }];
    const exits = fakeEngine({
      walks: [
        { alive: dying, complete: true, vanished: 0 },
        { alive: dying, complete: true, vanished: 0 },
        CLEAN,
      ],
    });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      { ...OPTIONS, awaitExit: true },
      exits.engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, dying: 1, misbehavior: [] });
    expect(exits.log.filter((entry) => entry === 'walk')).toHaveLength(3);
    const stuck = fakeEngine({ walks: [{ alive: dying, complete: true, vanished: 0 }] });
    const refused = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      { ...OPTIONS, awaitExit: true },
      stuck.engine,
    );
    expect(refused).toMatchObject({ confirmedEmpty: false, confirmedAt: null, dying: 1, survivors: [] });
    expect(refused.misbehavior[0]).toMatchObject({ code: 'UNREAPABLE' });
    expect(refused.misbehavior[0]!.message).toMatch(/1 with SIGKILL pending were still exiting/);
    expect(confirmedReapRecordSchema.parse(JSON.parse(JSON.stringify(refused)))).toEqual(refused);
  });

  it('with awaitExit, a proving sweep that found nothing at all is the first look (no walk again)', async () => {
    const clean = fakeEngine({});
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      { ...OPTIONS, awaitExit: true },
      clean.engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, dying: 0 });
    expect(clean.log.filter((entry) => entry === 'walk')).toHaveLength(1);
    // A sweep that skipped held members (a frozen group's) saw only part of the uid: walked again.
    const heldGroup: KillableGroup = {
      name: 'held',
      killAll: (options?: GroupKillOptions): Promise<GroupKillResult> =>
        Promise.resolve({
          mechanism: 'freeze-kill-thaw',
          signalled: 1,
          ...(options?.holdFrozen === true ? { hold: { members: [77], thaw: () => undefined } } : {}),
        }),
      pids: () => Promise.resolve([77]),
    };
    const held = fakeEngine({});
    const heldRecord = await runReap(
      { uid: 5000, group: heldGroup, pidNamespaceInitPid: undefined },
      { ...OPTIONS, awaitExit: true },
      held.engine,
    );
    expect(heldRecord.confirmedEmpty).toBe(true);
    expect(held.log.filter((entry) => entry === 'walk')).toHaveLength(2);
  });

  it('a process that can still run keeps the proof back even beside dying ones', async () => {
    const { engine, killedPids } = fakeEngine({
      walks: [
        {
          alive: [
            { pid: 90, name: 'p90', state: 'R', nested: false, dying: true },
            { pid: 91, name: 'p91', state: 'S', nested: false, dying: false },
          ],
          complete: true,
          vanished: 0,
        },
        CLEAN,
      ],
    });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(killedPids).toEqual([91]);
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 2, dying: 0, killed: { sweep: 1 } });
  });

  it('a dying namespace init is gone when a uid is swept, and must die outright when none is', async () => {
    const dyingInit: InitView = { startTicks: 1, isForeignInit: true, dead: false, dying: true };
    const withUid = fakeEngine({ init: [dyingInit] });
    const swept = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: 300 },
      OPTIONS,
      withUid.engine,
    );
    expect(swept).toMatchObject({ confirmedEmpty: true, passes: 1 });
    expect(withUid.killedPids).toEqual([]);
    const alone = fakeEngine({ init: [dyingInit] });
    const record = await runReap(
      { uid: undefined, group: undefined, pidNamespaceInitPid: 300 },
      OPTIONS,
      alone.engine,
    );
    expect(record.confirmedEmpty).toBe(false);
    expect(record.misbehavior[0]!.message).toMatch(/PID-namespace init 300 was still alive/);
  });

  it('does not kill a pid that is not the init of a foreign PID namespace', async () => {
    const { engine, killedPids } = fakeEngine({
      init: [{ startTicks: 1, isForeignInit: false, dead: false, dying: false }],
    });
    const record = await runReap(
      { uid: undefined, group: undefined, pidNamespaceInitPid: 300 },
      OPTIONS,
      engine,
    );
    expect(killedPids).toEqual([]);
    expect(record.confirmedEmpty).toBe(true);
    expect(record.problems.join()).toMatch(/not the init of another PID namespace/);
  });

  it('treats a reused init pid (other start time) as the namespace being gone', async () => {
    const { engine, killedPids } = fakeEngine({
      init: [
        { startTicks: 1, isForeignInit: true, dead: false, dying: false },
        { startTicks: 1, isForeignInit: true, dead: false, dying: false },
        { startTicks: 2, isForeignInit: true, dead: false, dying: false },
      ],
    });
    const record = await runReap(
      { uid: undefined, group: undefined, pidNamespaceInitPid: 300 },
      OPTIONS,
      engine,
    );
    expect(killedPids).toEqual([300]);
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 2 });
  });

  it('reports an init that never dies as unreapable', async () => {
    const { engine } = fakeEngine({
      init: [{ startTicks: 1, isForeignInit: true, dead: false, dying: false }],
    });
    const record = await runReap(
      { uid: undefined, group: undefined, pidNamespaceInitPid: 300 },
      OPTIONS,
      engine,
    );
    expect(record.confirmedEmpty).toBe(false);
    expect(record.misbehavior[0]!.message).toMatch(/PID-namespace init 300 was still alive/);
  });

  it('lists survivors (escaped) at the deadline', async () => {
    const { engine } = fakeEngine({
      walks: [
        {
          alive: [{ pid: 99, name: 'evil\nname', state: 'D', nested: false, dying: false }],
          complete: true,
          vanished: 0,
        },
      ],
    });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record.survivors).toEqual([{ pid: 99, name: 'evil\\nname' }]);
    expect(record.misbehavior[0]!.message).toContain('99 (evil\\nname)');
    expect(reapRecordSchema.parse(JSON.parse(JSON.stringify(record)))).toEqual(record);
  });

  it('throws HELPER_UNAVAILABLE when the helper fails with an exit status (a host fault)', async () => {
    const { engine } = fakeEngine({
      helper: [{ status: 'failed', exitCode: 1, stderr: 'setpriv: unknown capability' }],
    });
    await expect(
      runReap({ uid: 5000, group: undefined, pidNamespaceInitPid: undefined }, OPTIONS, engine),
    ).rejects.toMatchObject({ code: 'HELPER_UNAVAILABLE' });
  });

  it('retries a helper that failed for lack of pids or memory (a student can cause that)', async () => {
    const { engine } = fakeEngine({
      helper: [
        {
          status: 'failed',
          exitCode: 127,
          stderr: 'setpriv: failed to execute /bin/sh: Resource temporarily unavailable',
        },
        { status: 'spawn_failed', errno: 'EAGAIN', message: 'spawn EAGAIN' },
        CONFIRMED,
      ],
    });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 3 });
    expect(record.inCohort.failed).toBe(2);
  });

  it('retries a helper that exited 0 without the exact confirmation (its output was tampered with)', async () => {
    const { engine } = fakeEngine({
      helper: [{ status: 'failed', exitCode: 0, stderr: '' }, CONFIRMED],
    });
    const record = await runReap(
      { uid: 5000, group: undefined, pidNamespaceInitPid: undefined },
      OPTIONS,
      engine,
    );
    expect(record).toMatchObject({ confirmedEmpty: true, passes: 2 });
  });

  it('stops with ABORTED when the abort check fires', async () => {
    const { engine } = fakeEngine({ helper: [{ status: 'timed_out' }] });
    let calls = 0;
    engine.checkAbort = () => {
      calls += 1;
      if (calls > 3) throw new ProcReaperError('ABORTED', 'aborted');
    };
    await expect(
      runReap({ uid: 5000, group: undefined, pidNamespaceInitPid: undefined }, OPTIONS, engine),
    ).rejects.toMatchObject({ code: 'ABORTED' });
  });
});

describe('reap() argument checks (before any privilege check)', () => {
  it('refuses uid 0 as a caller error naming the field', async () => {
    await expect(reap({ uid: 0 })).rejects.toMatchObject({ name: 'BadArgumentError', field: 'uid' });
  });

  it('refuses an empty target, unknown keys and a bad group', async () => {
    await expect(reap({})).rejects.toMatchObject({ name: 'BadArgumentError' });
    await expect(reap({ uid: 5000, pid: 3 } as never)).rejects.toMatchObject({ field: 'pid' });
    await expect(reap({ uid: 5000, group: { name: 'x' } as never })).rejects.toMatchObject({
      field: 'group',
    });
    await expect(reap({ uid: 5000 }, { deadlineMs: -1 })).rejects.toMatchObject({ field: 'deadlineMs' });
    await expect(reap({ uid: 5000 }, { timeout: 5 } as never)).rejects.toMatchObject({ field: 'timeout' });
  });
});

describe('isGvisorVersion', () => {
  it("tells gVisor's fixed /proc/version from a real kernel's", () => {
    expect(
      isGvisorVersion('Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016 x86_64 GNU/Linux\n'),
    ).toBe(true);
    expect(isGvisorVersion('Linux version 4.4 #1 SMP Sun Jan 10 15:06:54 PST 2016\n')).toBe(true);
    expect(
      isGvisorVersion(
        'Linux version 6.18.0 (root@build) (gcc (Debian 12.2.0-14) 12.2.0) #1 SMP PREEMPT_DYNAMIC\n',
      ),
    ).toBe(false);
    expect(isGvisorVersion('')).toBe(false);
  });
});
