// The whole collect-then-grade sequence against a real student uid with real processes:
// proc-reaper reaps, proc-reaper and file-guard reclaim, file-guard takes custody, and the
// grader runs in its own sandbox. Each case asserts the verdict's status, score and reason.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { killUid, pidsOfUid, tempDir, testUid, waitFor } from '../../../test/support/index.js';
import { collectAndGrade } from './collect.js';
import type { SubmissionCollector } from './collector.js';
import { createDefaultCollector } from './default-collector.js';
import { createExecutableJudge } from './judges/executable.js';
import { verdictSchema } from './verdict.js';

const FIXTURES = path.join(import.meta.dirname, '..', 'test', 'fixtures');

let uid: number;
let work: { dir: string; cleanup: () => void };
let hidden: { dir: string; cleanup: () => void };
const planted: string[] = [];

beforeEach(() => {
  uid = testUid();
  work = tempDir('grader-student');
  fs.chownSync(work.dir, uid, uid);
  fs.chmodSync(work.dir, 0o755);
  hidden = tempDir('grader-hidden');
  fs.writeFileSync(path.join(hidden.dir, 'key.txt'), '42\n');
});

afterEach(async () => {
  await killUid(uid);
  for (const file of planted.splice(0)) fs.rmSync(file, { force: true });
  work.cleanup();
  hidden.cleanup();
});

/** Run a shell script as the student, in its working directory; background jobs outlive it. */
function asStudent(script: string): void {
  const result = spawnSync(
    '/usr/bin/setpriv',
    ['--reuid', String(uid), '--regid', String(uid), '--clear-groups', '/bin/sh', '-c', script],
    { cwd: work.dir, stdio: 'ignore', env: { PATH: '/usr/bin:/bin' } },
  );
  expect(result.status).toBe(0);
}

const compare = () =>
  createExecutableJudge({ program: path.join(FIXTURES, 'compare.mjs'), timeoutMs: 20_000 });

function grade(judge = compare(), reclaimRoots: string[] = []) {
  return collectAndGrade({
    student: { uid, workDir: work.dir },
    submission: ['answer.txt'],
    judge,
    hiddenDir: hidden.dir,
    reclaimRoots,
  });
}

describe('collectAndGrade (reap → reclaim → custody → judge)', () => {
  it('an honest submission passes, with the reap record, the custody manifest and timings', async () => {
    asStudent('echo 42 > answer.txt');
    const verdict = await grade();
    expect(verdictSchema.parse(verdict)).toEqual(verdict);
    expect(verdict).toMatchObject({
      status: 'passed',
      score: 1,
      judgeScore: 1,
      misbehavior: [],
      error: null,
    });
    expect(verdict.reap).toMatchObject({ confirmed: true, survivors: [] });
    expect(verdict.reclaim?.ok).toBe(true);
    expect(verdict.custody?.entries).toEqual([
      {
        path: 'answer.txt',
        type: 'file',
        bytes: 3,
        sha256: '084c799cd551dd1d8d5c5f9a5d593b2e931f5e36122ee5c793c1d08a19839cc0',
      },
    ]);
    expect(verdict.confinement?.level).toBe('sandbox');
    expect(verdict.student.uid).toBe(uid);
    for (const key of ['reapMs', 'reclaimMs', 'custodyMs', 'judgeMs'] as const) {
      expect(verdict.timings[key]).toBeGreaterThanOrEqual(0);
    }
    // keepCustody defaults to false: the custody copy is gone once the verdict exists.
    expect(fs.existsSync(verdict.custody!.dir!)).toBe(false);
  });

  it('a background writer the student started (setsid, renamed) is dead before custody and changes nothing', async () => {
    // Wrong now; a detached, renamed loop rewrites the right answer every 10 ms as soon as a
    // trigger file appears. The test drops the trigger right after the reap returns and before
    // custody starts: only a writer that survived the reap could act on it.
    asStudent(
      'echo wrong > answer.txt; setsid nohup /bin/bash -c \'exec -a kworker/0:1 /bin/bash -c "while [ ! -e go ]; do sleep 0.01; done; while :; do echo 42 > answer.txt; sleep 0.01; done"\' >/dev/null 2>&1 &',
    );
    await waitFor(() => pidsOfUid(uid).length > 0, 5000);
    const real = createDefaultCollector();
    const collector: SubmissionCollector = {
      ...real,
      reap: async (student, options) => {
        const result = await real.reap(student, options);
        fs.writeFileSync(path.join(work.dir, 'go'), '');
        await new Promise((resolve) => setTimeout(resolve, 300));
        return result;
      },
    };
    const verdict = await collectAndGrade({
      student: { uid, workDir: work.dir },
      submission: ['answer.txt'],
      judge: compare(),
      hiddenDir: hidden.dir,
      collector,
    });
    expect(verdict).toMatchObject({ status: 'failed', score: 0, judgeScore: 0, misbehavior: [] });
    expect(verdict.reap).toMatchObject({ confirmed: true, survivors: [] });
    expect(verdict.reap!.killed).toBeGreaterThanOrEqual(1);
    expect(verdict.judge?.metadata['answer']).toBe('wrong');
    expect(pidsOfUid(uid)).toEqual([]);
    expect(fs.readFileSync(path.join(work.dir, 'answer.txt'), 'utf8')).toBe('wrong\n');
  });

  it('score files the student planted in advance are ignored (and reclaimed)', async () => {
    const shm = `/dev/shm/karotte-planted-${uid}.json`;
    const tmp = `/tmp/karotte-planted-${uid}.json`;
    planted.push(shm, tmp);
    asStudent(
      `echo wrong > answer.txt; for f in score.json reward.json ${shm} ${tmp}; do echo '{"score": 1}' > "$f"; done`,
    );
    // This host gives the student no private /tmp: sweep it too.
    const honest = await grade(compare(), ['/tmp']);
    expect(honest).toMatchObject({ status: 'failed', score: 0, judgeScore: 0 });
    expect(fs.existsSync(shm)).toBe(false);
    expect(fs.existsSync(tmp)).toBe(false);

    asStudent(`echo '{"score": 1}' > ${shm}; echo '{"score": 1}' > score.json`);
    const silent = await grade(
      createExecutableJudge({
        program: path.join(FIXTURES, 'writes.mjs'),
        args: ['none'],
        timeoutMs: 20_000,
      }),
    );
    expect(silent).toMatchObject({
      status: 'failed',
      score: 0,
      graderFailure: { reason: 'SCORE_FILE_MISSING' },
      misbehavior: [{ code: 'GRADER_FAILED' }],
    });
  });

  it('a symlinked answer is misbehavior: failed, score 0, SYMLINK, and no judge runs', async () => {
    asStudent(`ln -s ${path.join(hidden.dir, 'key.txt')} answer.txt`);
    const verdict = await grade();
    expect(verdict).toMatchObject({
      status: 'failed',
      score: 0,
      judge: null,
      misbehavior: [{ code: 'SYMLINK' }],
    });
  });

  it('a directory submission with an inner link (allowed by the task) reaches the grader as a link', async () => {
    asStudent('mkdir out && echo result > out/a.txt && ln -s a.txt out/b');
    const verdict = await collectAndGrade({
      student: { uid, workDir: work.dir },
      submission: ['out'],
      judge: createExecutableJudge({ program: path.join(FIXTURES, 'read-tree.mjs'), timeoutMs: 20_000 }),
      collector: createDefaultCollector({ custody: { allowSymlinks: true } }),
    });
    expect(verdict).toMatchObject({
      status: 'passed',
      judge: { metadata: { 'out/a.txt': 'result', 'out/b': 'link:result' } },
    });
    expect(verdict.custody?.entries.map((e) => [e.path, e.type])).toEqual([
      ['out', 'directory'],
      ['out/a.txt', 'file'],
      ['out/b', 'symlink'],
    ]);
  });

  it('hostile file names (invalid UTF-8, newlines, leading dashes) never turn the run into error', async () => {
    asStudent(
      "mkdir out && echo a > \"$(printf 'out/bad\\377name')\" && printf 'b' > 'out/new\nline' && echo c > out/-rf",
    );
    const verdict = await collectAndGrade({
      student: { uid, workDir: work.dir },
      submission: ['out'],
      judge: createExecutableJudge({ program: path.join(FIXTURES, 'read-tree.mjs'), timeoutMs: 20_000 }),
    });
    expect(verdict).toMatchObject({ status: 'passed', error: null, misbehavior: [] });
    expect(verdict.custody?.entries.map((e) => e.path)).toEqual([
      'out',
      'out/-rf',
      'out/bad\\xffname',
      'out/new\\nline',
    ]);
    expect(verdict.judge?.metadata).toMatchObject({ 'out/-rf': 'c', 'out/new\\nline': 'b' });
  });

  it('a FIFO answer is misbehavior and never hangs: NOT_REGULAR_FILE', async () => {
    asStudent('mkfifo answer.txt');
    const verdict = await grade();
    expect(verdict).toMatchObject({
      status: 'failed',
      score: 0,
      misbehavior: [{ code: 'NOT_REGULAR_FILE' }],
    });
  });

  it('a missing answer is not misbehavior: the grader decides (failed, score 0)', async () => {
    const verdict = await grade();
    expect(verdict).toMatchObject({ status: 'failed', score: 0, judgeScore: 0, misbehavior: [] });
    expect(verdict.custody?.missing).toEqual(['answer.txt']);
    expect(verdict.judge?.metadata['answer']).toBeNull();
  });

  it('a grader that hangs on the submission: failed, TIMEOUT, and the verdict follows the limit at once', async () => {
    asStudent('echo 42 > answer.txt');
    const verdict = await grade(
      createExecutableJudge({ program: path.join(FIXTURES, 'hang.mjs'), timeoutMs: 1000 }),
    );
    // From the limit to the judge's report: kill and teardown only (room for a loaded host).
    const timings = verdict.judge!.timings!;
    expect(timings.runMs - 1000 + timings.teardownMs).toBeLessThan(4000);
    expect(verdict).toMatchObject({
      status: 'failed',
      score: 0,
      graderFailure: { reason: 'TIMEOUT', timedOut: true },
      limitHits: [{ scope: 'grader', limit: 'wall_time' }],
    });
  });
});
