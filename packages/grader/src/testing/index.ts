// The conformance suite of the `SubmissionCollector` seam, after unstorage's `testDriver()`: a
// contributor who writes a collector (another reaper, another custody copy, a remote host)
// calls `testCollector()` in a vitest file and gets the cases every collector must pass.
// Capability gaps are declared by name with a reason and show in the test title as skipped.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processesOfUid, resolveTrustedBinary, parseOptions } from '@karotte/base';
import type { UidProcess } from '@karotte/base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { CollectorCustody, StudentHandle, SubmissionCollector } from '../collector.js';

/** A process of the student held where a SIGKILL cannot finish it yet (frozen), until released. */
export interface UnkillableProcess {
  /** Let it die (thaw it, kill it) and wait until it is gone. */
  readonly release: () => Promise<void>;
}

/**
 * One student and the collector under test, made fresh by the factory for every case. The
 * suite starts the student's processes with {@link CollectorSubject.run}, calls the collector
 * and checks the host itself (a /proc walk by uid, the working directory, the custody copy).
 */
export interface CollectorSubject {
  /** The collector under test, set up for this student. */
  readonly collector: SubmissionCollector;
  /**
   * The student: a uid of its own (>= 1000, no other process uses it) and a working directory
   * on this host that the student owns (custody reads submission paths relative to it).
   */
  readonly student: StudentHandle;
  /**
   * Run a POSIX shell script as the student, in its working directory. Resolves once the
   * script has exited with status 0 (and rejects otherwise); processes it starts in the
   * background keep running.
   */
  readonly run: (script: string) => Promise<void>;
  /**
   * Start one process of the student that SIGKILL cannot finish until it is released (on a
   * cgroup v1 host: a task in a FROZEN freezer cgroup). The unconfirmed-reap case needs it;
   * without it, declare `skip.unkillableProcess` with the reason.
   */
  readonly startUnkillable?: () => Promise<UnkillableProcess>;
  /**
   * Remove everything the subject made (the student's processes, its working directory, the
   * collector's own state), on success and on failure. Called after every case.
   */
  readonly cleanup: () => Promise<void>;
}

/** Makes one {@link CollectorSubject}; called before every case. */
export type CollectorSubjectFactory = () => Promise<CollectorSubject>;

/** A capability gap: why the case cannot run against this collector (shown in the title). */
const skipReason = z.string().trim().min(1).max(500);

/** Options of {@link testCollector}. */
export const testCollectorOptionsSchema = z
  .object({
    /**
     * Capability gaps, each with its reason. A skipped case shows as `… (skipped: <reason>)`;
     * an unknown name is an error, so a typo never skips anything silently.
     * @default {}
     */
    skip: z
      .object({
        /**
         * The subject cannot hold a process where SIGKILL cannot finish it (a host without
         * a cgroup v1 freezer, for one): the case "a reap that cannot confirm says so" is
         * skipped.
         */
        unkillableProcess: skipReason.optional(),
      })
      .strict()
      .default({}),
    /**
     * Bound of each case, subject creation and cleanup included.
     * @default 120000
     */
    caseTimeoutMs: z.number().int().positive().max(3_600_000).default(120_000),
  })
  .strict();

/** Options of {@link testCollector}. */
export type TestCollectorOptions = z.input<typeof testCollectorOptionsSchema>;

/** Bound on waiting for the processes a script started to show in /proc. */
const SPAWN_WAIT_MS = 10_000;
/** Bound on one custody copy of a FIFO: a collector that opens it blocks forever. */
const FIFO_CUSTODY_BOUND_MS = 10_000;

/**
 * Register the conformance cases of a {@link SubmissionCollector} with vitest, in a
 * `describe` named after `name`. Call it at the top level of a test file, as root:
 *
 * - `reap` kills every process of the student (a background job, a `setsid` one, a double
 *   fork, a stopped one) and says `confirmed: true`, and a /proc walk then finds none;
 * - a `reap` that cannot kill a process says `confirmed: false` with survivors or misbehavior;
 * - `reclaim` removes the student's files from a RAM-backed root it is given (a tmpfs the suite
 *   mounts) and keeps everyone else's;
 * - `takeCustody` copies the submitted files into a root-only directory at the same relative
 *   paths, independent of the student's files, and reports the missing ones; `dispose()`
 *   removes that directory;
 * - a symlink, a symlinked parent directory or a FIFO at a submission path is refused as
 *   misbehavior (`SYMLINK`, `NOT_REGULAR_FILE`), never followed and never blocking.
 *
 * @throws BadArgumentError for invalid options (an unknown skip name included).
 */
export function testCollector(
  name: string,
  factory: CollectorSubjectFactory,
  options: TestCollectorOptions = {},
): void {
  const parsed = parseOptions(testCollectorOptionsSchema, options, 'testCollector options');
  const timeout = parsed.caseTimeoutMs;

  describe(`SubmissionCollector conformance: ${name}`, () => {
    const state: { subject?: CollectorSubject | undefined } = {};
    const subject = (): CollectorSubject => {
      if (state.subject === undefined) expect.fail('the factory gave no subject');
      return state.subject;
    };
    const live = (): AbortSignal => new AbortController().signal;

    beforeEach(async () => {
      state.subject = await factory();
      checkStudent(state.subject.student);
    }, timeout);

    afterEach(async () => {
      const made = state.subject;
      state.subject = undefined;
      await made?.cleanup();
    }, timeout);

    it(
      'reap kills every process of the student (background, setsid, double fork, stopped) and confirms it',
      async () => {
        const { collector, student, run } = subject();
        await run(
          [
            'sleep 1001 </dev/null >/dev/null 2>&1 &',
            'setsid sleep 1002 </dev/null >/dev/null 2>&1 &',
            "setsid sh -c 'sleep 1003 & exit 0' </dev/null >/dev/null 2>&1 &",
            'sleep 1004 </dev/null >/dev/null 2>&1 &',
            'kill -STOP $!',
          ].join('\n'),
        );
        // The processes exist, one of them stopped, before the reap: otherwise a collector that
        // kills nothing would pass. (The stop may land before the child has become `sleep`.)
        await waitUntil(
          () => {
            const alive = processesOfUid(student.uid).alive;
            return (
              alive.filter((p) => p.name === 'sleep').length >= 3 &&
              alive.some((p) => p.state === 'T' || p.state === 't')
            );
          },
          SPAWN_WAIT_MS,
          () => `the student's sleeps (one stopped) never showed: ${describeProcesses(student.uid)}`,
        );
        const reap = await collector.reap(student, { abortSignal: live() });
        expect(reap.confirmed, JSON.stringify(reap.record)).toBe(true);
        expect(reap.survivors).toEqual([]);
        expect(reap.misbehavior).toEqual([]);
        await expectNoProcessOf(student.uid);
      },
      timeout,
    );

    gated(
      'a process that cannot act on its SIGKILL yet never runs again: confirmed only as dying, or reported',
      parsed.skip.unkillableProcess,
      async () => {
        const { collector, student, startUnkillable } = subject();
        if (startUnkillable === undefined) {
          expect.fail(
            'the subject has no startUnkillable(): give one, or declare skip.unkillableProcess with the reason',
          );
        }
        const held = await startUnkillable();
        try {
          expect(processesOfUid(student.uid).alive.length).toBeGreaterThan(0);
          const reap = await collector.reap(student, { abortSignal: live() });
          // A collector may wait for the exit (and then cannot confirm while the process is
          // held) or confirm once nothing can run; never while the held process could.
          if (reap.confirmed) {
            const walk = processesOfUid(student.uid);
            expect(walk.alive.length, 'the held process is still there').toBeGreaterThan(0);
            expect(
              walk.alive.filter((p) => !p.dying).map((p) => `${p.pid} ${p.name}`),
              'confirmed while a process could still run',
            ).toEqual([]);
          } else {
            expect(reap.survivors.length + reap.misbehavior.length).toBeGreaterThan(0);
          }
        } finally {
          await held.release();
        }
      },
      timeout,
    );

    it(
      'reclaim removes the files the student left in a RAM-backed root and keeps the others',
      async () => {
        const { collector, student } = subject();
        await expectConfirmedReap(collector, student);
        await withTmpfs(async (root) => {
          // Made as root and given to the student: the root lies outside what a confined
          // student can reach, and reclaim goes by owner, not by who wrote the bytes.
          const left = path.join(root, 'karotte-left.txt');
          const deep = path.join(root, 'karotte-dir');
          const keep = path.join(root, 'karotte-keep.txt');
          fs.writeFileSync(left, 'left by the student\n');
          fs.mkdirSync(path.join(deep, 'inner'), { recursive: true });
          fs.writeFileSync(path.join(deep, 'inner', 'file.bin'), Buffer.alloc(4096, 1));
          for (const p of [left, deep, path.join(deep, 'inner'), path.join(deep, 'inner', 'file.bin')]) {
            fs.lchownSync(p, student.uid, student.uid);
          }
          fs.writeFileSync(keep, 'the host keeps this\n');
          const reclaim = await collector.reclaim(student, { roots: [root], abortSignal: live() });
          expect(reclaim.ok, JSON.stringify(reclaim.record)).toBe(true);
          expect(reclaim.misbehavior).toEqual([]);
          expect(fs.existsSync(left)).toBe(false);
          expect(fs.existsSync(deep)).toBe(false);
          expect(fs.readFileSync(keep, 'utf8')).toBe('the host keeps this\n');
        });
      },
      timeout,
    );

    it(
      'takeCustody copies the submission into a root-only directory at the same paths and reports what is missing',
      async () => {
        const { collector, student, run } = subject();
        await run(
          "mkdir -p out/nested && printf 'karotte answer\\n' > answer.txt && printf 'nested\\n' > out/nested/result.txt",
        );
        await expectConfirmedReap(collector, student);
        const custody = await collector.takeCustody(
          student,
          ['answer.txt', 'out/nested/result.txt', 'absent.txt'],
          { abortSignal: live() },
        );
        try {
          expect(custody.misbehavior).toEqual([]);
          expect(custody.missing).toEqual(['absent.txt']);
          expect(custody.dir).not.toBeNull();
          const dir = custody.dir!;
          expectRootOnly(dir, 'directory');
          for (const [rel, text] of [
            ['answer.txt', 'karotte answer\n'],
            ['out/nested/result.txt', 'nested\n'],
          ] as const) {
            expectRootOnly(path.join(dir, rel), 'file');
            expect(fs.readFileSync(path.join(dir, rel), 'utf8')).toBe(text);
            expect(custody.entries).toContainEqual(
              expect.objectContaining({ path: rel, type: 'file', bytes: Buffer.byteLength(text) }),
            );
          }
          expect(custody.totalBytes).toBe(Buffer.byteLength('karotte answer\nnested\n'));
          // A copy, not a view: what happens to the student's file later changes nothing.
          fs.writeFileSync(path.join(student.workDir, 'answer.txt'), 'changed afterwards\n');
          expect(fs.readFileSync(path.join(dir, 'answer.txt'), 'utf8')).toBe('karotte answer\n');
        } finally {
          await custody.dispose();
        }
        if (custody.dir !== null) expect(fs.existsSync(custody.dir)).toBe(false);
      },
      timeout,
    );

    it(
      'a symlink, a symlinked parent or a FIFO at a submission path is refused as misbehavior, never followed',
      async () => {
        const { collector, student, run } = subject();
        await withSecret(async (secretFile, secret) => {
          // The link resolves on the host, where custody runs as root: following it would
          // copy a root-only file the student cannot read.
          await run(
            [
              `ln -s '${secretFile}' link.txt`,
              `ln -s '${path.dirname(secretFile)}' linkdir`,
              'mkfifo pipe',
            ].join(' && '),
          );
          await expectConfirmedReap(collector, student);
          for (const [submission, code] of [
            ['link.txt', 'SYMLINK'],
            [`linkdir/${path.basename(secretFile)}`, 'SYMLINK'],
            ['pipe', 'NOT_REGULAR_FILE'],
          ] as const) {
            const custody = await bounded(
              collector.takeCustody(student, [submission], { abortSignal: live() }),
              FIFO_CUSTODY_BOUND_MS,
              `takeCustody(['${submission}']) did not return within ${FIFO_CUSTODY_BOUND_MS} ms`,
            );
            try {
              expect(
                custody.misbehavior.map((m) => m.code),
                `misbehavior of ${submission}`,
              ).toContain(code);
              expectNoCopyOf(custody, secret);
            } finally {
              await custody.dispose();
            }
          }
        });
      },
      timeout,
    );
  });
}

/** `it`, or `it.skip` with the reason in the title when the capability is declared missing. */
function gated(title: string, reason: string | undefined, fn: () => Promise<void>, timeout: number): void {
  if (reason === undefined) it(title, fn, timeout);
  else it.skip(`${title} (skipped: ${reason})`, fn, timeout);
}

function checkStudent(student: StudentHandle): void {
  expect(student.uid, 'the student uid').toBeGreaterThanOrEqual(1000);
  expect(path.isAbsolute(student.workDir), `workDir ${student.workDir} is absolute`).toBe(true);
  expect(fs.statSync(student.workDir).uid, 'the student owns its working directory').toBe(student.uid);
}

async function expectConfirmedReap(collector: SubmissionCollector, student: StudentHandle): Promise<void> {
  const reap = await collector.reap(student, { abortSignal: new AbortController().signal });
  expect(reap.confirmed, JSON.stringify(reap.record)).toBe(true);
}

/**
 * After a confirmed reap nothing of the uid can run: every process left has SIGKILL pending
 * (the kernel may still be tearing it down), and all of them are gone soon after.
 */
async function expectNoProcessOf(uid: number): Promise<void> {
  const walk = processesOfUid(uid);
  expect(walk.complete, walk.problem).toBe(true);
  const line = (p: UidProcess): string => `${p.pid} ${p.name} ${p.state}`;
  expect(walk.alive.filter((p) => !p.dying).map(line)).toEqual([]);
  const deadline = Date.now() + EXIT_WAIT_MS;
  while (processesOfUid(uid).alive.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  expect(processesOfUid(uid).alive.map(line)).toEqual([]);
}

/** How long processes a confirmed reap left dying get to finish their exit. */
const EXIT_WAIT_MS = 10_000;

function describeProcesses(uid: number): string {
  const alive = processesOfUid(uid).alive;
  return alive.length === 0 ? 'none alive' : alive.map((p) => `${p.pid} ${p.name} ${p.state}`).join(', ');
}

/** Owned by root, no access for group or others, of the given type (never a link). */
function expectRootOnly(target: string, type: 'file' | 'directory'): void {
  const stats = fs.lstatSync(target);
  expect(type === 'file' ? stats.isFile() : stats.isDirectory(), `${target} is a ${type}`).toBe(true);
  expect(stats.uid, `${target} is owned by root`).toBe(0);
  expect(stats.mode & 0o077, `${target} has no group or other access`).toBe(0);
}

/** No file anywhere under the custody directory holds the secret. */
function expectNoCopyOf(custody: CollectorCustody, secret: string): void {
  if (custody.dir === null || !fs.existsSync(custody.dir)) return;
  const files = fs.readdirSync(custody.dir, { recursive: true, withFileTypes: true });
  for (const entry of files) {
    const full = path.join(entry.parentPath, entry.name);
    if (entry.isSymbolicLink()) expect.fail(`custody holds a symlink: ${full}`);
    if (entry.isFile()) expect(fs.readFileSync(full, 'utf8')).not.toContain(secret);
  }
}

async function waitUntil(predicate: () => boolean, timeoutMs: number, why: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) expect.fail(why());
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `promise`, or a failure after `timeoutMs`: a blocked collector fails the case, never hangs it. */
async function bounded<T>(promise: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  const late = Symbol('late');
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<typeof late>((resolve) => {
    timer = setTimeout(() => {
      resolve(late);
    }, timeoutMs);
  });
  try {
    const result = await Promise.race([promise, deadline]);
    if (result === late) expect.fail(message);
    return result;
  } finally {
    clearTimeout(timer);
  }
}

/** A root-only secret file (`karotte-conformance-secret-…`), removed afterwards. */
async function withSecret(fn: (file: string, secret: string) => Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-conformance-secret-'));
  try {
    fs.chmodSync(dir, 0o700);
    const secret = `karotte-secret-${String(process.pid)}-${String(Date.now())}`;
    const file = path.join(dir, 'key.txt');
    fs.writeFileSync(file, `${secret}\n`, { mode: 0o600 });
    await fn(file, secret);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A fresh tmpfs (source `karotte-conformance`) on a temporary directory, unmounted and removed afterwards. */
async function withTmpfs(fn: (root: string) => Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-conformance-ram-'));
  let mounted = false;
  try {
    const mount = spawnSync(
      resolveTrustedBinary('mount'),
      ['-t', 'tmpfs', '-o', 'size=8m,mode=1777', 'karotte-conformance', dir],
      { encoding: 'utf8', timeout: 10_000 },
    );
    expect(mount.status, `mount a tmpfs on ${dir}: ${mount.stderr}`).toBe(0);
    mounted = true;
    await fn(dir);
  } finally {
    if (mounted) await unmountTmpfs(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Unmount the test's tmpfs. Any process that resolves a path through it holds it for that
 * moment (another test listing and stat-ing the temporary directory, say), so "busy" is
 * retried for a few seconds. A mount still busy then fails the test with the processes that
 * hold it, and is detached lazily so that it never outlives the test.
 */
async function unmountTmpfs(dir: string): Promise<void> {
  const umount = resolveTrustedBinary('umount');
  const deadline = Date.now() + 3000;
  for (;;) {
    const done = spawnSync(umount, [dir], { encoding: 'utf8', timeout: 10_000 });
    if (done.status === 0) return;
    if (!/busy/i.test(done.stderr) || Date.now() > deadline) {
      const holders = processesUsing(dir);
      spawnSync(umount, ['-l', dir], { encoding: 'utf8', timeout: 10_000 });
      expect.fail(
        `unmount ${dir}: ${done.stderr.trim()}; held by: ${holders.join(', ') || 'no process seen'}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `<pid> <comm> <link>` for each process whose cwd, root or an open descriptor lies under `dir`. */
function processesUsing(dir: string): string[] {
  const out: string[] = [];
  const inside = (target: string | undefined): boolean =>
    target !== undefined && (target === dir || target.startsWith(`${dir}/`));
  const link = (file: string): string | undefined => {
    try {
      return fs.readlinkSync(file);
    } catch {
      return undefined;
    }
  };
  for (const name of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    let fds: string[] = [];
    try {
      fds = fs.readdirSync(`/proc/${name}/fd`).map((fd) => `fd/${fd}`);
    } catch {
      // gone, or not ours to read
    }
    for (const entry of ['cwd', 'root', ...fds]) {
      const target = link(`/proc/${name}/${entry}`);
      if (!inside(target)) continue;
      let comm = '?';
      try {
        comm = fs.readFileSync(`/proc/${name}/comm`, 'utf8').trim();
      } catch {
        // gone
      }
      out.push(`${name} ${comm} ${entry}`);
    }
  }
  return out;
}
