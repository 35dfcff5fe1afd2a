// The conformance suite of the `StudentWorld` seam, after unstorage's `testDriver()`: a
// contributor who gives episodes another world (a VM, a container runtime, a remote host)
// passes the factory they would give `createEpisode` to `testStudentWorld()` in a vitest file
// and gets the cases every world must pass. Capability gaps are declared by name with a
// reason and show in the test title as skipped.
import fs from 'node:fs';
import path from 'node:path';
import { MiB, parseOptions, processesOfUid } from '@karotte/base';
import type { UidProcess } from '@karotte/base';
import { createDefaultCollector, createFunctionJudge, networkCheckSchema } from '@karotte/grader';
import type { CollectorCustody, SubmissionCollector } from '@karotte/grader';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTask } from '../define-task.js';
import type { WorldFactory, WorldSpec } from '../episode.js';
import type { StudentWorld } from '../world.js';

/** A capability gap: why the cases cannot run against this world (shown in their titles). */
const skipReason = z.string().trim().min(1).max(500);

/** Options of {@link testStudentWorld}. */
export const testStudentWorldOptionsSchema = z
  .object({
    /**
     * Capability gaps, each with its reason. A skipped case shows as `… (skipped: <reason>)`;
     * an unknown name is an error, so a typo never skips anything silently.
     * @default {}
     */
    skip: z
      .object({
        /**
         * The world has network on purpose: the cases "the network check found it isolated"
         * and "no route leaves the shell" are skipped (the record is still checked).
         */
        networkIsolation: skipReason.optional(),
        /** The world enforces no process limit: the case "a limit hit is reported" is skipped. */
        limits: skipReason.optional(),
        /**
         * The student cannot be reaped or collected from this host (its processes and files
         * live elsewhere): the collector cases are skipped.
         */
        collector: skipReason.optional(),
        /** The world offers no `files` (a shell only): the file-tools case is skipped. */
        files: skipReason.optional(),
        /** The world offers no `restart()`: the restart case is skipped. */
        restart: skipReason.optional(),
      })
      .strict()
      .default({}),
    /**
     * Bytes the output case prints on stdout and on stderr each: more than the world keeps.
     * @default 1048576
     */
    outputFloodBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(64 * MiB)
      .default(MiB),
    /**
     * Bound of each case, the world's creation and destruction included.
     * @default 120000
     */
    caseTimeoutMs: z.number().int().positive().max(3_600_000).default(120_000),
  })
  .strict();

/** Options of {@link testStudentWorld}. */
export type TestStudentWorldOptions = z.input<typeof testStudentWorldOptionsSchema>;

/** The process limit of the worlds the suite asks for; the limit case starts more than that. */
const SUITE_PIDS = 64;
/** The limits every world of the suite is asked for (`WorldSpec.limits`). */
const SUITE_LIMITS = { pids: SUITE_PIDS, diskBytes: 64 * MiB, memoryBytes: 256 * MiB } as const;
/** Bound of one ordinary command. */
const COMMAND_TIMEOUT_MS = 20_000;
/** The timeout the timeout case gives its `sleep 30`. */
const SHORT_TIMEOUT_MS = 1500;
/** Bound on waiting for the processes a command started to show in /proc. */
const SPAWN_WAIT_MS = 10_000;

/**
 * Register the conformance cases of a {@link StudentWorld} with vitest, in a `describe` named
 * after `name`. `createWorld` is the factory an episode would get (`EpisodeOptions.createWorld`);
 * the suite calls it once per case with a task of its own and the limits
 * `{ pids: 64, diskBytes: 64 MiB, memoryBytes: 256 MiB }`, and destroys the world after the case.
 * Call it at the top level of a test file, as root, on the host the world's processes run on
 * (the suite walks /proc by uid and reads the working directory on the host):
 *
 * - `exec` runs as the world's uid, in a persistent shell that starts in `workDir` and keeps
 *   its working directory and exported variables; a command past its timeout is stopped
 *   (`timedOut`) and the same shell goes on; output past the cap is cut, with `truncated`
 *   and the real byte counts;
 * - a file the student writes appears at `workDir` on the host, owned by `uid`; `handle`
 *   agrees with `uid` and `workDir`;
 * - `network` is a checked record, isolated, with no route out of the shell (`networkIsolation`);
 * - `limitHits()` resolves with arrays, empty for an honest student, and reports a process
 *   limit the student ran into (`limits`);
 * - the collector the episode grades with (the world's, else the grader's default) reaps a
 *   background job and a `setsid` double fork, confirms none is alive, takes custody of a
 *   submitted file and refuses a symlink at a submission path as misbehavior (`collector`);
 * - `files` (when offered) act as the student in its working directory; `restart()` (when
 *   offered) stops every process and starts a fresh shell there, keeping the files (`files`,
 *   `restart`);
 * - `destroy()` can be called twice and leaves no process of the uid.
 *
 * @throws BadArgumentError for invalid options (an unknown skip name included).
 */
export function testStudentWorld(
  name: string,
  createWorld: WorldFactory,
  options: TestStudentWorldOptions = {},
): void {
  const parsed = parseOptions(testStudentWorldOptionsSchema, options, 'testStudentWorld options');
  const { skip, caseTimeoutMs: timeout, outputFloodBytes: flood } = parsed;
  const withWorld = (body: (world: StudentWorld) => Promise<void>) => () => inWorld(createWorld, body);

  describe(`StudentWorld conformance: ${name}`, () => {
    it(
      'runs each command as the world uid, in a shell that starts in workDir',
      withWorld(async (world) => {
        expect(world.uid, 'the student uid').toBeGreaterThanOrEqual(1000);
        const id = await run(world, 'id -u; pwd');
        expect(id).toMatchObject({ exitCode: 0, timedOut: false, truncated: false, stderr: '' });
        const [uid, cwd] = id.stdout.split('\n');
        expect(uid).toBe(String(world.uid));
        expect(id.stdoutBytes).toBe(Buffer.byteLength(id.stdout));
        // The student may see its working directory under another path: mark it from the
        // host and look for the mark from inside.
        const mark = `karotte-conformance-mark-${String(process.pid)}`;
        fs.writeFileSync(path.join(world.workDir, mark), '');
        expect((await run(world, `ls -a '${cwd ?? ''}'`)).stdout.split('\n')).toContain(mark);
      }),
      timeout,
    );

    it(
      'keeps the working directory and exported variables between commands',
      withWorld(async (world) => {
        const first = await run(
          world,
          'mkdir karotte-sub && cd karotte-sub && export KAROTTE_CONFORMANCE=kept',
        );
        expect(first.exitCode).toBe(0);
        const second = await run(world, 'basename "$PWD"; printf "%s\\n" "$KAROTTE_CONFORMANCE"');
        expect(second.stdout).toBe('karotte-sub\nkept\n');
      }),
      timeout,
    );

    it(
      'stops a command past its timeout (timedOut) and the same shell goes on',
      withWorld(async (world) => {
        expect((await run(world, 'export KAROTTE_BEFORE=still-here')).exitCode).toBe(0);
        const started = performance.now();
        const slow = await world.exec('sleep 30', { timeoutMs: SHORT_TIMEOUT_MS });
        const elapsedMs = performance.now() - started;
        expect(slow.timedOut).toBe(true);
        expect(slow.durationMs).toBeGreaterThanOrEqual(SHORT_TIMEOUT_MS * 0.9);
        // Stopped at the timeout, not at the end of the sleep (room for a loaded host).
        expect(elapsedMs).toBeLessThan(SHORT_TIMEOUT_MS + 10_000);
        const next = await run(world, 'printf "%s\\n" "$KAROTTE_BEFORE"');
        expect(next).toMatchObject({ exitCode: 0, timedOut: false, stdout: 'still-here\n' });
      }),
      timeout,
    );

    it(
      `cuts output past the cap (${String(flood)} bytes on each stream), with truncated and the real byte counts`,
      withWorld(async (world) => {
        const big = await run(
          world,
          `head -c ${String(flood)} /dev/zero | tr '\\0' a; head -c ${String(flood)} /dev/zero | tr '\\0' b >&2`,
        );
        expect(big).toMatchObject({ exitCode: 0, timedOut: false, truncated: true });
        expect(big.stdoutBytes).toBe(flood);
        expect(big.stderrBytes).toBe(flood);
        expect(Buffer.byteLength(big.stdout)).toBeLessThan(flood);
        expect(Buffer.byteLength(big.stderr)).toBeLessThan(flood);
        expect(big.stdout.startsWith('aaaa')).toBe(true);
        expect(big.stderr.startsWith('bbbb')).toBe(true);
        expect((await run(world, 'echo after')).stdout).toBe('after\n');
      }),
      timeout,
    );

    it(
      'a file the student writes in its working directory is at workDir on the host, owned by uid',
      withWorld(async (world) => {
        expect((await run(world, "printf 'karotte conformance\\n' > karotte-written.txt")).exitCode).toBe(0);
        const file = path.join(world.workDir, 'karotte-written.txt');
        const stats = fs.lstatSync(file);
        expect(stats.isFile()).toBe(true);
        expect(stats.uid).toBe(world.uid);
        expect(fs.readFileSync(file, 'utf8')).toBe('karotte conformance\n');
      }),
      timeout,
    );

    it(
      'handle.uid and handle.workDir agree with the world; workDir is a host directory the student owns',
      withWorld((world) => {
        expect(world.handle.uid).toBe(world.uid);
        expect(world.handle.workDir).toBe(world.workDir);
        expect(path.isAbsolute(world.workDir)).toBe(true);
        const stats = fs.lstatSync(world.workDir);
        expect(stats.isDirectory()).toBe(true);
        expect(stats.uid).toBe(world.uid);
        return Promise.resolve();
      }),
      timeout,
    );

    it(
      'network is a checked record',
      withWorld((world) => {
        expect(networkCheckSchema.parse(world.network)).toEqual(world.network);
        expect(world.network.checked).toBe(true);
        return Promise.resolve();
      }),
      timeout,
    );

    gated(
      'the network check found the world isolated, and no route leaves the shell while loopback works',
      skip.networkIsolation,
      withWorld(async (world) => {
        expect(world.network, world.network.detail).toMatchObject({ checked: true, isolated: true });
        // Route lookups only (a UDP connect sends no packet), with loopback as the positive
        // control: a shell that cannot make the lookup at all fails the control.
        const probe = (address: string) =>
          `if (exec 3<>/dev/udp/${address}/53) 2>/dev/null; then echo '${address} reachable'; else echo '${address} unreachable'; fi`;
        const seen = await run(
          world,
          ['127.0.0.1', '1.1.1.1', '169.254.169.254', '10.0.0.1'].map(probe).join('; '),
        );
        expect(seen.stdout.split('\n').filter(Boolean)).toEqual([
          '127.0.0.1 reachable',
          '1.1.1.1 unreachable',
          '169.254.169.254 unreachable',
          '10.0.0.1 unreachable',
        ]);
      }),
      timeout,
    );

    it(
      'limitHits() resolves with arrays, empty for an honest student',
      withWorld(async (world) => {
        expect((await run(world, 'echo honest > honest.txt')).exitCode).toBe(0);
        const limits = await world.limitHits();
        expect(limits).toEqual({ hits: [], misbehavior: [] });
      }),
      timeout,
    );

    gated(
      `limitHits() reports a process limit the student ran into (asked for pids: ${String(SUITE_PIDS)})`,
      skip.limits,
      withWorld(async (world) => {
        // A bounded number of processes, twice the limit, started by xargs (whose forks fail
        // once the limit is reached): not a fork bomb. The command is stopped after 3 s,
        // long after the limit was reached; destroy() takes what is left.
        const count = SUITE_PIDS * 2;
        await world.exec(`seq ${String(count)} | xargs -P ${String(count)} -n 1 sleep 30 >/dev/null 2>&1`, {
          timeoutMs: 3000,
        });
        const { hits, misbehavior } = await world.limitHits();
        expect(hits.map((hit) => hit.limit)).toContain('pids');
        expect(misbehavior.map((m) => m.code)).toContain('PIDS_LIMIT');
      }),
      timeout,
    );

    gated(
      'the collector the episode grades with reaps a background job and a setsid double fork, and confirms none is alive',
      skip.collector,
      withWorld(async (world) => {
        const started = await run(
          world,
          [
            'sleep 1001 </dev/null >/dev/null 2>&1 &',
            "setsid sh -c 'sleep 1002 </dev/null >/dev/null 2>&1 & exit 0' </dev/null >/dev/null 2>&1 &",
            'echo started',
          ].join('\n'),
        );
        expect(started.stdout).toBe('started\n');
        await waitUntil(
          () => sleepsOf(world.uid).length >= 2,
          SPAWN_WAIT_MS,
          () => `the student's two sleeps never showed: ${describeProcesses(world.uid)}`,
        );
        const reap = await collectorOf(world).reap(world.handle, { abortSignal: live() });
        expect(reap.confirmed, JSON.stringify(reap.record)).toBe(true);
        expect(reap.survivors).toEqual([]);
        expectNoProcessOf(world.uid);
      }),
      timeout,
    );

    gated(
      'the collector takes custody of a submitted file and refuses a symlink at a submission path as misbehavior',
      skip.collector,
      withWorld(async (world) => {
        const wrote = await run(
          world,
          "printf 'karotte answer\\n' > answer.txt && ln -s /etc/shadow link.txt",
        );
        expect(wrote.exitCode).toBe(0);
        const collector = collectorOf(world);
        const reap = await collector.reap(world.handle, { abortSignal: live() });
        expect(reap.confirmed, JSON.stringify(reap.record)).toBe(true);
        await withCustody(collector, world, ['answer.txt'], (custody) => {
          expect(custody.misbehavior).toEqual([]);
          expect(custody.missing).toEqual([]);
          expect(custody.dir).not.toBeNull();
          const copy = path.join(custody.dir!, 'answer.txt');
          const stats = fs.lstatSync(copy);
          expect(stats.isFile()).toBe(true);
          expect(stats.uid, 'the custody copy is root-owned').toBe(0);
          expect(fs.readFileSync(copy, 'utf8')).toBe('karotte answer\n');
        });
        await withCustody(collector, world, ['link.txt'], (custody) => {
          expect(custody.misbehavior.map((m) => m.code)).toContain('SYMLINK');
          if (custody.dir !== null) expect(fs.existsSync(path.join(custody.dir, 'link.txt'))).toBe(false);
        });
      }),
      timeout,
    );

    gated(
      'files act as the student in its working directory: what they write the shell reads, and the reverse',
      skip.files,
      withWorld(async (world) => {
        const files = world.files;
        if (files === undefined) {
          expect.fail('the world has no files: give them, or declare skip.files with the reason');
        }
        const wrote = await files.write({ path: 'karotte-tool.txt', content: 'from the tool\n' });
        expect(wrote).toMatchObject({ ok: true, bytes: 14 });
        const stats = fs.lstatSync(path.join(world.workDir, 'karotte-tool.txt'));
        expect(stats.isFile()).toBe(true);
        expect(stats.uid, "a file the tools write is the student's").toBe(world.uid);
        expect((await run(world, 'cat karotte-tool.txt')).stdout).toBe('from the tool\n');
        expect((await run(world, "printf 'from the shell\\n' > karotte-shell.txt")).exitCode).toBe(0);
        expect(await files.readText({ path: 'karotte-shell.txt' })).toMatchObject({
          ok: true,
          content: 'from the shell\n',
        });
        const listed = await files.list({});
        expect(listed.ok).toBe(true);
        if (listed.ok) {
          expect(listed.entries.map((entry) => entry.name)).toEqual(
            expect.arrayContaining(['karotte-tool.txt', 'karotte-shell.txt']),
          );
        }
        // With the student's rights, never the host's: a root-only file stays unread.
        fs.writeFileSync(path.join(world.workDir, 'karotte-root-only.txt'), 'root only\n', { mode: 0o600 });
        expect(await files.readText({ path: 'karotte-root-only.txt' })).toMatchObject({ ok: false });
      }),
      timeout,
    );

    gated(
      'restart() stops every process of the world and starts a fresh shell in workDir, keeping the files',
      skip.restart,
      withWorld(async (world) => {
        if (world.restart === undefined) {
          expect.fail('the world has no restart(): give one, or declare skip.restart with the reason');
        }
        const before = await run(
          world,
          "export KAROTTE_OLD_SHELL=1; printf 'kept\\n' > karotte-kept.txt; sleep 1001 </dev/null >/dev/null 2>&1 & echo started",
        );
        expect(before.stdout).toBe('started\n');
        await waitUntil(
          () => sleepsOf(world.uid).length >= 1,
          SPAWN_WAIT_MS,
          () => `the student's sleep never showed: ${describeProcesses(world.uid)}`,
        );
        const sleeps = sleepsOf(world.uid).map((p) => p.pid);
        await world.restart();
        const alive = processesOfUid(world.uid).alive.map((p) => p.pid);
        expect(
          alive.filter((pid) => sleeps.includes(pid)),
          'the old processes are gone',
        ).toEqual([]);
        const after = await run(world, 'cat karotte-kept.txt; printf "%s\\n" "${KAROTTE_OLD_SHELL-unset}"');
        expect(after).toMatchObject({ exitCode: 0, stdout: 'kept\nunset\n' });
      }),
      timeout,
    );

    it(
      'destroy() can be called twice and leaves no process of the uid',
      async () => {
        const world = await createWorld(suiteSpec());
        const uid = world.uid;
        try {
          const started = await run(
            world,
            "sleep 1001 </dev/null >/dev/null 2>&1 & setsid sh -c 'sleep 1002 & exit 0' </dev/null >/dev/null 2>&1 & echo started",
          );
          expect(started.stdout).toBe('started\n');
          await waitUntil(
            () => sleepsOf(uid).length >= 2,
            SPAWN_WAIT_MS,
            () => `the student's two sleeps never showed: ${describeProcesses(uid)}`,
          );
        } finally {
          await world.destroy();
        }
        expectNoProcessOf(uid);
        await world.destroy();
        expectNoProcessOf(uid);
      },
      timeout,
    );
  });
}

/** The task and limits the suite asks every world for; its judge never runs. */
function suiteSpec(): WorldSpec {
  const task = defineTask({
    id: 'karotte-conformance',
    instructions: 'The StudentWorld conformance suite drives this world; nothing is graded.',
    submission: ['answer.txt'],
    judge: createFunctionJudge(() => 0, { name: 'karotte-conformance' }),
    limits: SUITE_LIMITS,
  });
  return { task, limits: SUITE_LIMITS, abortSignal: live() };
}

/** Run `body` in a fresh world and destroy it, on success and on failure. */
async function inWorld(
  createWorld: WorldFactory,
  body: (world: StudentWorld) => Promise<void>,
): Promise<void> {
  const world = await createWorld(suiteSpec());
  let failed = true;
  try {
    await body(world);
    failed = false;
  } finally {
    // A failed destroy fails the case, unless the case already failed for its own reason.
    await world.destroy().catch((error: unknown) => {
      if (!failed) throw error;
    });
  }
}

/** `it`, or `it.skip` with the reason in the title when the capability is declared missing. */
function gated(title: string, reason: string | undefined, fn: () => Promise<void>, timeout: number): void {
  if (reason === undefined) it(title, fn, timeout);
  else it.skip(`${title} (skipped: ${reason})`, fn, timeout);
}

/** A signal that never aborts: the suite bounds its cases with vitest's timeout. */
function live(): AbortSignal {
  return new AbortController().signal;
}

function run(world: StudentWorld, command: string) {
  return world.exec(command, { timeoutMs: COMMAND_TIMEOUT_MS });
}

/** What `collectAndGrade` uses for this world: its own collector, else the grader's default. */
function collectorOf(world: StudentWorld): SubmissionCollector {
  return world.collector ?? createDefaultCollector();
}

async function withCustody(
  collector: SubmissionCollector,
  world: StudentWorld,
  submission: readonly string[],
  check: (custody: CollectorCustody) => void,
): Promise<void> {
  const custody = await collector.takeCustody(world.handle, submission, { abortSignal: live() });
  try {
    check(custody);
  } finally {
    await custody.dispose();
  }
  if (custody.dir !== null)
    expect(fs.existsSync(custody.dir), 'dispose() removed the custody copy').toBe(false);
}

function expectNoProcessOf(uid: number): void {
  const walk = processesOfUid(uid);
  expect(walk.complete, walk.problem).toBe(true);
  expect(walk.alive.map(({ pid, name, state }) => `${String(pid)} ${name} ${state}`)).toEqual([]);
}

function sleepsOf(uid: number): UidProcess[] {
  return processesOfUid(uid).alive.filter((p) => p.name === 'sleep');
}

function describeProcesses(uid: number): string {
  const alive = processesOfUid(uid).alive;
  return alive.length === 0
    ? 'none alive'
    : alive.map((p) => `${String(p.pid)} ${p.name} ${p.state}`).join(', ');
}

async function waitUntil(predicate: () => boolean, timeoutMs: number, why: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) expect.fail(why());
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
