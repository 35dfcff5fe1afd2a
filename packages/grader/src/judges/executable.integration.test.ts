// Real grader processes in the real sandbox (root): fresh uids, pid/mount/net namespaces, a
// cgroup v1 memory+pids+freezer group, private tmpfs. Each case asserts status, score, reason.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { pidsOfUid, tempDir } from '../../../../test/support/index.js';
import type { JudgeContext } from '../judge.js';
import type { JudgeReport } from '../verdict.js';
import { allOf, weighted } from './compose.js';
import { createExecutableJudge } from './executable.js';
import type { ExecutableJudgeOptions } from './executable.js';
import { createRegexJudge } from './regex.js';

const FIXTURES = path.join(import.meta.dirname, '..', '..', 'test', 'fixtures');
const fixture = (name: string): string => path.join(FIXTURES, name);

let submission: { dir: string; cleanup: () => void };
let hidden: { dir: string; cleanup: () => void };

beforeEach(() => {
  submission = tempDir('grader-sub');
  hidden = tempDir('grader-hidden');
  fs.writeFileSync(path.join(submission.dir, 'answer.txt'), '42\n');
  fs.writeFileSync(path.join(hidden.dir, 'key.txt'), '42\n');
});
afterEach(() => {
  submission.cleanup();
  hidden.cleanup();
});

function context(overrides: Partial<JudgeContext> = {}): JudgeContext {
  return {
    submissionDir: submission.dir,
    hiddenDir: hidden.dir,
    finalAnswer: null,
    abortSignal: new AbortController().signal,
    path: 'grader',
    ...overrides,
  };
}

function judge(program: string, options: Partial<ExecutableJudgeOptions> = {}) {
  return createExecutableJudge({
    program: fixture(program),
    timeoutMs: 20_000,
    memoryBytes: 256 * MiB,
    ...options,
  });
}

/** Nothing of the grader is left: no process of its uid, no cgroup, no mount, no private dir. */
function expectNothingLeft(report: JudgeReport): void {
  const uid = report.confinement.uid;
  expect(uid).not.toBeNull();
  expect(pidsOfUid(uid!)).toEqual([]);
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  expect(mounts).not.toContain(`karotte-grade-${uid}-`);
  expect(mounts).not.toContain(`uid=${uid},`);
  expect(
    fs.readdirSync('/var/lib/karotte/grader').filter((n) => n.startsWith(`karotte-grade-${uid}-`)),
  ).toEqual([]);
  expect(fs.existsSync(`/run/karotte/grader-uids/${uid}`)).toBe(false);
  for (const controller of ['memory', 'pids', 'freezer']) {
    const self = fs
      .readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((line) => line.split(':')[1]?.split(',').includes(controller));
    const where = path.join('/sys/fs/cgroup', controller, self!.split(':')[2]!);
    expect(fs.readdirSync(where).filter((n) => n.startsWith(`karotte-grader-${uid}-`))).toEqual([]);
  }
}

describe('executable judge in its sandbox', () => {
  it('scores an honest grader, as a fresh uid with a clean environment and copies only', async () => {
    const report = await judge('compare.mjs').evaluate(context());
    expect(report).toMatchObject({ status: 'scored', score: 1, failure: null, error: null });
    expect(report.confinement).toMatchObject({
      level: 'sandbox',
      memory: 'prevented',
      networkIsolated: true,
    });
    const uid = report.confinement.uid!;
    expect(uid).toBeGreaterThanOrEqual(1_900_000_000);
    expect(report.metadata['uid']).toBe(uid);
    expect(report.metadata['envKeys']).toEqual([
      'HOME',
      'KAROTTE_HIDDEN_DIR',
      'KAROTTE_SCORE_FILE',
      'KAROTTE_SUBMISSION_DIR',
      'LANG',
      'LC_ALL',
      'PATH',
      'PYTHONDONTWRITEBYTECODE',
      'PYTHONNOUSERSITE',
      'TMPDIR',
    ]);
    expect(report.metadata['cwd']).toBe(report.metadata['home']);
    expectNothingLeft(report);
  });

  it('a hanging grader (with a setsid grandchild) is killed whole at the timeout: failed, TIMEOUT', async () => {
    // The limit must leave the grader time to start node and its grandchild on a loaded
    // machine (the clock starts at the readiness byte, before node starts): the grandchild in
    // the output is what makes this test about a whole tree.
    const report = await judge('hang.mjs', { timeoutMs: 3000 }).evaluate(context());
    expect(report).toMatchObject({
      status: 'failed',
      score: 0,
      failure: { reason: 'TIMEOUT', timedOut: true },
    });
    expect(report.failure?.stdoutTail).toMatch(/grandchild \d+/);
    expect(report.limitHits).toEqual([
      expect.objectContaining({ limit: 'wall_time', limitValue: 3000, enforcement: 'prevented' }),
    ]);
    // The harness moves on at once: from the limit to the report (kill, exit, proof the cgroup
    // is empty, unmount, removal) is tens of ms on an idle host; the bound leaves room for a
    // loaded CI machine. Setup before the grader starts is not the grader's time.
    const timings = report.timings!;
    expect(timings.runMs).toBeGreaterThanOrEqual(3000);
    expect(timings.runMs - 3000 + timings.teardownMs).toBeLessThan(4000);
    expectNothingLeft(report);
  });

  it('a grader flooding stdout is killed at the cap: failed, OUTPUT_LIMIT', async () => {
    const report = await judge('flood.mjs', { outputBytes: MiB }).evaluate(context());
    expect(report).toMatchObject({ status: 'failed', score: 0, failure: { reason: 'OUTPUT_LIMIT' } });
    expect(report.failure?.stdoutTail).toMatch(/^A{100}/);
    expect(report.limitHits[0]).toMatchObject({ limit: 'output', limitValue: MiB });
    expect(report.limitHits[0]!.observed).toBeGreaterThan(MiB);
    expectNothingLeft(report);
  });

  it('a grader allocating without bound hits its memory limit (read back): failed, MEMORY_LIMIT', async () => {
    const report = await judge('hog.mjs', { memoryBytes: 64 * MiB }).evaluate(context());
    expect(report).toMatchObject({ status: 'failed', score: 0, failure: { reason: 'MEMORY_LIMIT' } });
    const hit = report.limitHits.find((h) => h.limit === 'memory');
    expect(hit).toMatchObject({ scope: 'grader', limitValue: 64 * MiB, enforcement: 'prevented' });
    expect(hit!.observed).toBeGreaterThan(32 * MiB);
    expect(hit!.observed).toBeLessThanOrEqual(64 * MiB);
    expectNothingLeft(report);
  });

  it('a grader exiting non-zero: failed, EXIT_CODE with the stderr tail', async () => {
    const report = await judge('exit3.mjs').evaluate(context());
    expect(report).toMatchObject({
      status: 'failed',
      score: 0,
      failure: { reason: 'EXIT_CODE', exitCode: 3, signal: null, timedOut: false },
    });
    expect(report.failure?.stderrTail).toContain('grader: cannot parse the submission');
    expectNothingLeft(report);
  });

  it.each([
    ['nan', 'SCORE_NOT_JSON'],
    ['overflow', 'SCORE_NOT_JSON'],
    ['string', 'SCORE_INVALID'],
    ['deep', 'METADATA_TOO_DEEP'],
    ['huge', 'SCORE_FILE_TOO_LARGE'],
    ['symlink', 'SCORE_FILE_NOT_REGULAR'],
    ['none', 'SCORE_FILE_MISSING'],
  ])('a score file "%s" is refused: failed, %s', async (mode, reason) => {
    const report = await judge('writes.mjs', { args: [mode] }).evaluate(context());
    expect(report).toMatchObject({ status: 'failed', score: 0, failure: { reason, exitCode: 0 } });
    expectNothingLeft(report);
  });

  it('a valid score file with hostile metadata is escaped', async () => {
    const report = await judge('writes.mjs', { args: ['valid'] }).evaluate(context());
    expect(report).toMatchObject({ status: 'scored', score: 0.5, metadata: { note: 'fine\\u{1b}[2J' } });
  });

  it('a submission crafted against a naive grader (../ paths) harms nothing outside the sandbox', async () => {
    const outside = [
      '/var/lib/karotte/karotte-pwned',
      '/root/karotte-pwned',
      '/tmp/karotte-pwned',
      '/etc/karotte-pwned',
    ];
    for (const file of outside) fs.rmSync(file, { force: true });
    const files = [
      { path: 'ok.txt', content: 'fine' },
      { path: '../../../../../../var/lib/karotte/karotte-pwned', content: 'x' },
      { path: '../../../../../../root/karotte-pwned', content: 'x' },
      { path: '../../../../../../etc/karotte-pwned', content: 'x' },
      { path: '../../../../../../tmp/karotte-pwned', content: 'x' },
    ];
    fs.writeFileSync(path.join(submission.dir, 'archive.json'), JSON.stringify({ files }));
    const report = await judge('naive-unpack.mjs').evaluate(context());
    expect(report.status).toBe('scored');
    const seen = report.metadata;
    expect(seen['ok.txt']).toBe('written');
    expect(seen['../../../../../../var/lib/karotte/karotte-pwned']).toMatch(/EROFS|EACCES|ENOENT/);
    expect(seen['../../../../../../root/karotte-pwned']).toMatch(/EROFS|EACCES|ENOENT/);
    expect(seen['../../../../../../etc/karotte-pwned']).toMatch(/EROFS|EACCES|ENOENT/);
    // /tmp is the sandbox's private tmpfs: the write lands there and dies with it.
    expect(seen['../../../../../../tmp/karotte-pwned']).toBe('written');
    for (const file of outside) expect(fs.existsSync(file)).toBe(false);
    expect(seen['readShadow']).toBe('EACCES');
    expect(seen['writeSubmission']).toMatch(/EROFS|EACCES/);
    expect(seen['writeHidden']).toMatch(/EROFS|EACCES/);
    // Its own pid namespace: it sees only the world's PID 1 (a shell and the `cat` holding the
    // harness's pipe) and itself, never the harness.
    expect(seen['processes']).toBe(3);
    expect(seen['udpRoute']).toBe('ENETUNREACH');
    // A fresh sysfs: no cgroup filesystem to write; no privileges to gain or keep.
    expect(seen['cgroupEntries']).toBe(0);
    expect(seen['noNewPrivs']).toBe('1');
    expect(seen['capBnd']).toBe('0000000000000000');
    expect(seen['groups']).toBe('');
    expect(seen['coreLimit']).toBe('0 0');
    expect(seen['tcpLoopback']).toMatch(/ENETUNREACH|ECONNREFUSED/);
    expect(fs.readFileSync(path.join(submission.dir, 'archive.json'), 'utf8')).toContain('karotte-pwned');
    expectNothingLeft(report);
  });

  it('reads nothing of the host outside its system part (a checkout, /srv, /home, ...): only the copies', async () => {
    // World-readable answer keys where a checkout could be: a new top-level directory, and a
    // user's home directory.
    for (const prefix of ['/karotte-test-hostview-', '/home/karotte-test-hostview-']) {
      const outside = fs.mkdtempSync(prefix);
      try {
        fs.chmodSync(outside, 0o755);
        fs.writeFileSync(path.join(outside, 'expected.txt'), '42\n', { mode: 0o644 });
        const report = await judge('read-path.mjs', { args: [path.join(outside, 'expected.txt')] }).evaluate(
          context(),
        );
        expect(report, prefix).toMatchObject({ status: 'scored', score: 0 });
        expect(report.metadata['error']).toMatch(/^(EACCES|ENOENT)$/);
        expectNothingLeft(report);
      } finally {
        fs.rmSync(outside, { recursive: true, force: true });
      }
    }
    // Control: the system part stays readable (the grader needs its libraries and config).
    const control = await judge('read-path.mjs', { args: ['/etc/passwd'] }).evaluate(context());
    expect(control).toMatchObject({ status: 'scored', score: 1 });
  });

  it('never uses a node or python3 shim a student put on PATH', async () => {
    const student = tempDir('grader-shim');
    const marker = path.join(student.dir, 'shim-ran');
    try {
      for (const name of ['node', 'python3', 'sh']) {
        const shim = path.join(student.dir, name);
        fs.writeFileSync(
          shim,
          `#!/bin/sh\necho ran > ${marker}\necho '{"score": 1}' > "$KAROTTE_SCORE_FILE"\n`,
        );
        fs.chmodSync(shim, 0o755);
      }
      const savedPath = process.env['PATH'];
      process.env['PATH'] = `${student.dir}:${savedPath ?? ''}`;
      try {
        fs.writeFileSync(path.join(submission.dir, 'answer.txt'), 'wrong\n');
        const nodeReport = await judge('compare.mjs').evaluate(context());
        expect(nodeReport).toMatchObject({ status: 'scored', score: 0 });
        expect(nodeReport.metadata['answer']).toBe('wrong');
        const pyJudge = createExecutableJudge({
          program: fixture('grade.py'),
          interpreter: '/usr/bin/python3',
        });
        const pyReport = await pyJudge.evaluate(context());
        expect(pyReport).toMatchObject({
          status: 'scored',
          score: 0,
          metadata: { python: '/usr/bin/python3' },
        });
      } finally {
        process.env['PATH'] = savedPath;
      }
      expect(fs.existsSync(marker)).toBe(false);
    } finally {
      student.cleanup();
    }
  });

  it('runs the grader under the syscall filter: keys, AF_VSOCK, user namespaces, io_uring, perf refused', async () => {
    const report = await createExecutableJudge({
      program: fixture('syscall-filter.pl'),
      interpreter: '/usr/bin/perl',
      timeoutMs: 20_000,
    }).evaluate(context());
    expect(report).toMatchObject({
      status: 'scored',
      score: 1,
      metadata: {
        add_key: '38',
        socket_vsock: '97',
        unshare_user: '1',
        io_uring_setup: '38',
        perf_event_open: '1',
      },
    });
    expectNothingLeft(report);
  });

  it('refuses an interpreter in a directory others can write: error UNTRUSTED_INTERPRETER', async () => {
    const dir = tempDir('grader-interp');
    try {
      fs.chmodSync(dir.dir, 0o777);
      const copy = path.join(dir.dir, 'node');
      fs.copyFileSync(process.execPath, copy);
      fs.chmodSync(copy, 0o755);
      const report = await createExecutableJudge({
        program: fixture('compare.mjs'),
        interpreter: copy,
      }).evaluate(context());
      expect(report).toMatchObject({ status: 'error', error: { code: 'UNTRUSTED_INTERPRETER' } });
    } finally {
      dir.cleanup();
    }
  });

  it('refuses an interpreter the grader uid cannot reach: error UNTRUSTED_INTERPRETER', async () => {
    const dir = fs.mkdtempSync('/var/lib/karotte/karotte-test-interp-');
    try {
      fs.chmodSync(dir, 0o700);
      const copy = path.join(dir, 'node');
      fs.copyFileSync(process.execPath, copy);
      fs.chmodSync(copy, 0o755);
      const report = await createExecutableJudge({
        program: fixture('compare.mjs'),
        interpreter: copy,
      }).evaluate(context());
      expect(report).toMatchObject({
        status: 'error',
        error: { code: 'UNTRUSTED_INTERPRETER', message: expect.stringContaining('not searchable') },
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a grader that exits at once is still a grader that ran (its exit may be seen before its readiness byte)', async () => {
    // An instant grader under /bin/sh, many at once: the exit and the readiness byte race on
    // two channels. Each must be the student-free verdict "no score file", never the host
    // fault SETUP_FAILED (what a lost race once reported, with an empty stderr).
    const programs = tempDir('grader-instant');
    const program = path.join(programs.dir, 'instant.sh');
    fs.writeFileSync(program, 'exit 0\n');
    fs.chmodSync(program, 0o644);
    const instant = createExecutableJudge({ program, interpreter: '/usr/bin/dash', timeoutMs: 20_000 });
    const reports = await Promise.all(Array.from({ length: 24 }, () => instant.evaluate(context()))).finally(
      programs.cleanup,
    );
    for (const report of reports) {
      expect(report, JSON.stringify({ error: report.error, failure: report.failure })).toMatchObject({
        status: 'failed',
        score: 0,
        failure: { reason: 'SCORE_FILE_MISSING' },
      });
      expectNothingLeft(report);
    }
  });

  it('a missing grader program is a host fault: error GRADER_NOT_FOUND', async () => {
    const report = await createExecutableJudge({ program: fixture('does-not-exist.mjs') }).evaluate(
      context(),
    );
    expect(report).toMatchObject({ status: 'error', score: 0, error: { code: 'GRADER_NOT_FOUND' } });
  });

  it('cancelling kills the grader at once: error ABORTED', async () => {
    // Cancel once the grader is being launched: setup is not cancelled midway, and on a loaded
    // host it can outlast any fixed delay. The program, named for this test only, is in the
    // argv of its launch (its copy keeps the name).
    const programs = tempDir('grader-abort');
    const program = path.join(programs.dir, `hang-abort-${process.pid}.mjs`);
    fs.copyFileSync(fixture('hang.mjs'), program);
    fs.chmodSync(program, 0o644);
    const launched = (): boolean =>
      fs
        .readdirSync('/proc')
        .filter((name) => /^\d+$/.test(name))
        .some((pid) => {
          try {
            return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(path.basename(program));
          } catch {
            return false;
          }
        });
    const controller = new AbortController();
    let abortedAt = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching && !launched()) await new Promise((resolve) => setTimeout(resolve, 20));
      if (!watching) return;
      abortedAt = performance.now();
      controller.abort();
    })();
    let report: JudgeReport;
    try {
      report = await createExecutableJudge({ program, timeoutMs: 30_000, memoryBytes: 256 * MiB }).evaluate(
        context({ abortSignal: controller.signal }),
      );
    } finally {
      watching = false;
      await watcher;
      programs.cleanup();
    }
    expect(abortedAt).toBeGreaterThan(0);
    // From the abort to the report: a kill and a teardown (room for a loaded host), never the
    // 30 s limit.
    expect(performance.now() - abortedAt).toBeLessThan(4000);
    expect(report).toMatchObject({ status: 'error', error: { code: 'ABORTED' } });
    expectNothingLeft(report);
  });

  it('composes with other judges', async () => {
    const composite = allOf([judge('compare.mjs'), createRegexJudge({ patterns: ['42'] })]);
    const passed = await composite.evaluate(context({ finalAnswer: 'It is 42.' }));
    expect(passed).toMatchObject({ status: 'scored', score: 1 });
    expect(passed.children?.map((c) => c.kind)).toEqual(['executable', 'regex']);
    expect(passed.confinement.level).toBe('in_process');

    const mixed = await weighted([
      { judge: judge('compare.mjs'), weight: 3 },
      { judge: createRegexJudge({ patterns: ['43'] }), weight: 1 },
    ]).evaluate(context({ finalAnswer: 'It is 42.' }));
    expect(mixed).toMatchObject({ status: 'scored', score: 0.75 });

    const failing = await allOf([createRegexJudge({ patterns: ['42'] }), judge('exit3.mjs')], {
      name: 'both',
    }).evaluate(context({ finalAnswer: '42', path: 'both' }));
    expect(failing).toMatchObject({
      status: 'failed',
      score: 0,
      failure: { reason: 'EXIT_CODE', judge: 'both/executable:exit3.mjs' },
    });
  });

  it('runs at the process level without a sandbox when asked (no memory limit, group kill)', async () => {
    const report = await judge('compare.mjs', { isolation: 'process' }).evaluate(context());
    expect(report).toMatchObject({
      status: 'scored',
      score: 1,
      confinement: { level: 'process', memory: 'not_supported' },
    });
    const hung = await judge('exit3.mjs', { isolation: 'process' }).evaluate(context());
    expect(hung).toMatchObject({ status: 'failed', failure: { reason: 'EXIT_CODE', exitCode: 3 } });
  });
});

describe('host checks', () => {
  it('mkfifo exists for the FIFO tests', () => {
    expect(spawnSync('/usr/bin/test', ['-x', '/usr/bin/mkfifo']).status).toBe(0);
  });
});
