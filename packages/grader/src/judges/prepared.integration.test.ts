// Judges made ahead (`prepare()`), with real grader worlds (root): what a preparation holds
// (uid, cgroup with the world's PID 1, score tmpfs, private directory), that the evaluation
// grades the inputs as they are when it is called, and that every path releases all of it.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { pidsOfUid, tempDir, waitFor } from '../../../../test/support/index.js';
import { prepareJudge } from '../judge.js';
import type { JudgeContext } from '../judge.js';
import { createJudgePool } from '../judge-pool.js';
import { allOf, anyOf } from './compose.js';
import { createExecutableJudge } from './executable.js';
import type { ExecutableJudgeOptions } from './executable.js';
import { createRegexJudge } from './regex.js';

const FIXTURES = path.join(import.meta.dirname, '..', '..', 'test', 'fixtures');
const WORK_DIR = '/var/lib/karotte/grader';

let submission: { dir: string; cleanup: () => void };
let hidden: { dir: string; cleanup: () => void };
let locks: { dir: string; cleanup: () => void };

beforeEach(() => {
  submission = tempDir('grader-prep-sub');
  hidden = tempDir('grader-prep-hidden');
  locks = tempDir('grader-prep-uids');
  fs.writeFileSync(path.join(submission.dir, 'answer.txt'), '42\n');
  fs.writeFileSync(path.join(hidden.dir, 'key.txt'), '42\n');
});
afterEach(() => {
  submission.cleanup();
  hidden.cleanup();
  locks.cleanup();
});

function context(): JudgeContext {
  return {
    submissionDir: submission.dir,
    hiddenDir: hidden.dir,
    finalAnswer: null,
    abortSignal: new AbortController().signal,
    path: 'grader',
  };
}

function judge(options: Partial<ExecutableJudgeOptions> = {}) {
  return createExecutableJudge({
    program: path.join(FIXTURES, 'compare.mjs'),
    timeoutMs: 20_000,
    memoryBytes: 256 * MiB,
    uidLockDir: locks.dir,
    ...options,
  });
}

/** The grader uids leased now (this test's lock directory). */
function leased(): number[] {
  return fs
    .readdirSync(locks.dir)
    .filter((n) => /^\d+\.lock$/.test(n))
    .map((n) => parseInt(n, 10));
}

/** The grader cgroups of `uid` (memory, pids, freezer), where this process's own groups are. */
function cgroupsOf(uid: number): string[] {
  const out: string[] = [];
  for (const controller of ['memory', 'pids', 'freezer']) {
    const self = fs
      .readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((line) => line.split(':')[1]?.split(',').includes(controller));
    const where = path.join('/sys/fs/cgroup', controller, self!.split(':')[2]!);
    for (const name of fs.readdirSync(where)) {
      if (name.startsWith(`karotte-grader-${uid}-`)) out.push(path.join(where, name));
    }
  }
  return out;
}

/** Processes in the grader's cgroups: a prepared judge's world (its root PID 1). */
function processesOf(uid: number): number[] {
  return cgroupsOf(uid).flatMap((dir) =>
    fs
      .readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map(Number),
  );
}

/** Kill a prepared judge's world from outside (each of its processes once; one gone already is fine). */
function killWorldOf(uid: number): void {
  for (const pid of new Set(processesOf(uid))) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
}

function expectNothingLeft(uid: number): void {
  expect(pidsOfUid(uid)).toEqual([]);
  expect(cgroupsOf(uid)).toEqual([]);
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  expect(mounts).not.toContain(`karotte-grade-${uid}-`);
  expect(fs.readdirSync(WORK_DIR).filter((n) => n.startsWith(`karotte-grade-${uid}-`))).toEqual([]);
  expect(leased()).not.toContain(uid);
}

describe('a prepared executable judge', () => {
  it('holds a started world and the program copy, and grades the inputs as they are when evaluated', async () => {
    // Wrong when prepared, right when graded: the copy is taken at the evaluation.
    fs.writeFileSync(path.join(submission.dir, 'answer.txt'), '41\n');
    const prepared = await prepareJudge(judge());
    expect(prepared).not.toBeNull();
    const [uid] = leased();
    try {
      expect(prepared!.usable()).toBe(true);
      // The world's PID 1 waits in the grader's cgroup; nothing runs as the grader's uid yet.
      expect(processesOf(uid!).length).toBeGreaterThan(0);
      expect(pidsOfUid(uid!)).toEqual([]);
      const [root] = fs.readdirSync(WORK_DIR).filter((n) => n.startsWith(`karotte-grade-${uid}-`));
      const inputs = path.join(WORK_DIR, root!);
      expect(fs.readdirSync(path.join(inputs, 'program'))).toEqual(['compare.mjs']);
      // The episode's inputs are not there: root's empty directories until the evaluation.
      for (const dir of ['submission', 'hidden']) {
        const stats = fs.statSync(path.join(inputs, dir));
        expect({ uid: stats.uid, mode: stats.mode & 0o777 }).toEqual({ uid: 0, mode: 0o700 });
        expect(fs.readdirSync(path.join(inputs, dir))).toEqual([]);
      }

      fs.writeFileSync(path.join(submission.dir, 'answer.txt'), '42\n');
      const report = await prepared!.evaluate(context());
      expect(report).toMatchObject({ status: 'scored', score: 1, error: null });
      expect(report.confinement.uid).toBe(uid);
      expect(report.timings!.preparedMs).toBeGreaterThan(0);
      // What is left to do at the call is the copies: the world was already up.
      expect(report.timings!.setupMs).toBeLessThan(report.timings!.preparedMs!);
      expect(prepared!.usable()).toBe(false);
      expectNothingLeft(uid!);
    } finally {
      await prepared!.dispose();
    }
    expectNothingLeft(uid!);
  });

  it('grades a wrong answer wrong (the prepared run is no shortcut past the grader)', async () => {
    fs.writeFileSync(path.join(submission.dir, 'answer.txt'), '41\n');
    const prepared = await prepareJudge(judge());
    const [uid] = leased();
    try {
      expect(await prepared!.evaluate(context())).toMatchObject({ status: 'scored', score: 0 });
    } finally {
      await prepared!.dispose();
    }
    expectNothingLeft(uid!);
  });

  it('disposed unused, releases its world, cgroup, score tmpfs, directory and uid (twice is a no-op)', async () => {
    const prepared = await prepareJudge(judge());
    const [uid] = leased();
    const init = processesOf(uid!);
    expect(init.length).toBeGreaterThan(0);
    await prepared!.dispose();
    await prepared!.dispose();
    expectNothingLeft(uid!);
    for (const pid of init) expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
    expect(prepared!.usable()).toBe(false);
  });

  it('whose world died is not usable, and grades in a run made then', async () => {
    const prepared = await prepareJudge(judge());
    const [uid] = leased();
    try {
      killWorldOf(uid!);
      await waitFor(() => !prepared!.usable(), 10_000);
      const report = await prepared!.evaluate(context());
      expect(report).toMatchObject({ status: 'scored', score: 1 });
      expect(report.timings!.preparedMs).toBeUndefined();
      expectNothingLeft(report.confinement.uid!);
    } finally {
      await prepared!.dispose();
    }
    expectNothingLeft(uid!);
  });

  it('evaluated a second time, sets up anew like the judge itself', async () => {
    const prepared = await prepareJudge(judge());
    try {
      const first = await prepared!.evaluate(context());
      const second = await prepared!.evaluate(context());
      expect([first.score, second.score]).toEqual([1, 1]);
      expect(first.timings!.preparedMs).toBeGreaterThan(0);
      expect(second.timings!.preparedMs).toBeUndefined();
    } finally {
      await prepared!.dispose();
    }
    expect(leased()).toEqual([]);
  });

  it('a cancelled preparation throws ABORTED and leaves nothing', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(prepareJudge(judge(), { abortSignal: controller.signal })).rejects.toMatchObject({
      code: 'ABORTED',
    });
    expect(leased()).toEqual([]);
  });

  it('a preparation that cannot be made throws the fault evaluate would report', async () => {
    const missing = judge({ program: path.join(FIXTURES, 'no-such-grader.mjs') });
    await expect(prepareJudge(missing)).rejects.toMatchObject({ code: 'GRADER_NOT_FOUND' });
    expect(await missing.evaluate(context())).toMatchObject({
      status: 'error',
      error: { code: 'GRADER_NOT_FOUND' },
    });
    expect(leased()).toEqual([]);
  });

  it('of a composite prepares every child, releases the ones never evaluated, and all of them when one cannot be made', async () => {
    const prepared = await prepareJudge(allOf([judge(), judge({ name: 'again' })]));
    expect(leased()).toHaveLength(2);
    const report = await prepared!.evaluate(context());
    await prepared!.dispose();
    expect(report).toMatchObject({ status: 'scored', score: 1 });
    expect(report.children!.map((c) => c.timings!.preparedMs! > 0)).toEqual([true, true]);
    expect(leased()).toEqual([]);

    // anyOf stops at the first 1: the second child's run was made and is released unused.
    const early = await prepareJudge(anyOf([judge(), judge({ name: 'unused' })]));
    expect(leased()).toHaveLength(2);
    expect((await early!.evaluate(context())).children).toHaveLength(1);
    await early!.dispose();
    expect(leased()).toEqual([]);

    const broken = allOf([judge(), judge({ program: path.join(FIXTURES, 'no-such-grader.mjs') })]);
    await expect(prepareJudge(broken)).rejects.toMatchObject({ code: 'GRADER_NOT_FOUND' });
    expect(leased()).toEqual([]);
  });
});

describe('a judge pool', () => {
  it('hands out one made ahead, refills, discards a dead one, and releases its reserve on close', async () => {
    const pool = createJudgePool({ size: 1 });
    const j = judge();
    try {
      // The first is made on demand; the reserve fills behind it.
      const cold = await pool.prepare(j);
      expect(pool.stats()).toMatchObject({ cold: 1, warm: 0 });
      await waitFor(() => pool.stats().idle === 1, 30_000);
      expect(await cold!.evaluate(context())).toMatchObject({ status: 'scored', score: 1 });
      await cold!.dispose();

      const warm = await pool.prepare(j);
      expect(pool.stats()).toMatchObject({ warm: 1 });
      const report = await warm!.evaluate(context());
      await warm!.dispose();
      expect(report).toMatchObject({ status: 'scored', score: 1 });
      expect(report.timings!.preparedMs).toBeGreaterThan(0);

      // A pooled one whose world died is released, never handed out.
      await waitFor(() => pool.stats().idle === 1, 30_000);
      for (const uid of leased()) killWorldOf(uid);
      const replaced = await pool.prepare(j);
      expect(pool.stats().discarded).toBe(1);
      expect(replaced!.usable()).toBe(true);
      await replaced!.dispose();

      // Nothing to make ahead for a judge without setup.
      expect(await pool.prepare(createRegexJudge({ patterns: ['x'] }))).toBeNull();
      await waitFor(() => pool.stats().idle === 1, 30_000);
    } finally {
      await pool.close();
    }
    expect(leased()).toEqual([]);
    await expect(pool.prepare(j)).rejects.toMatchObject({ code: 'ABORTED' });
  });
});
