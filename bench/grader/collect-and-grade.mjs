// Overhead of the full collect-then-grade sequence on a small submission (one 3-byte answer
// file), against the baseline of running the same grader script directly with node (the
// harness's own node, the same env variables, no sandbox, no reap, no custody). Also the
// judge alone (the sandboxed executable judge on an existing custody copy) to split the cost,
// and the judge alone with its setup made ahead (prepareJudge, as an episode does while the
// student works).
// Needs root (a real student uid, the grader's sandbox, cgroups).
//
//   pnpm --filter @karotte/grader build && node bench/grader/collect-and-grade.mjs [--runs 15]
//
// Everything lives under fresh karotte-bench-grader-* directories and is deleted at the end,
// also on failure; the student uid's processes are killed by uid.
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  collectAndGrade,
  createExecutableJudge,
  gradeSubmission,
  prepareJudge,
} from '../../packages/grader/dist/index.js';

const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg === -1 ? 15 : Number(process.argv[runsArg + 1]);
const here = path.dirname(fileURLToPath(import.meta.url));
const GRADER = path.join(here, '..', '..', 'packages', 'grader', 'test', 'fixtures', 'compare.mjs');
if (process.getuid() !== 0)
  throw new Error('run as root: the benchmark uses a real student uid and the grader sandbox');

const uid = 3_980_000_000 + randomInt(1_000_000);
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-grader-'));
const work = path.join(base, 'work');
const hidden = path.join(base, 'hidden');
const custody = path.join(base, 'custody');
const scoreDir = path.join(base, 'score');
for (const dir of [work, hidden, custody, scoreDir]) fs.mkdirSync(dir, { mode: 0o700 });
fs.chownSync(work, uid, uid);
fs.writeFileSync(path.join(hidden, 'key.txt'), '42\n');
fs.writeFileSync(path.join(custody, 'answer.txt'), '42\n');

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function asStudent(script) {
  const result = spawnSync(
    '/usr/bin/setpriv',
    ['--reuid', String(uid), '--regid', String(uid), '--clear-groups', '/bin/sh', '-c', script],
    {
      cwd: work,
      stdio: 'ignore',
    },
  );
  if (result.status !== 0) throw new Error('student script failed');
}

function direct() {
  const started = performance.now();
  const result = spawnSync(process.execPath, [GRADER], {
    env: {
      KAROTTE_SUBMISSION_DIR: custody,
      KAROTTE_HIDDEN_DIR: hidden,
      KAROTTE_SCORE_FILE: path.join(scoreDir, 'score.json'),
    },
  });
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`direct grader failed: ${result.stderr}`);
  return ms;
}

const judge = createExecutableJudge({ program: GRADER, timeoutMs: 30_000 });

async function full() {
  asStudent('echo 42 > answer.txt');
  const started = performance.now();
  const verdict = await collectAndGrade({
    student: { uid, workDir: work },
    submission: ['answer.txt'],
    judge,
    hiddenDir: hidden,
  });
  const ms = performance.now() - started;
  if (verdict.status !== 'passed') throw new Error(`unexpected verdict ${JSON.stringify(verdict)}`);
  return { ms, timings: verdict.timings };
}

/** The judge with its setup made ahead (prepareJudge, not timed: an episode makes it while the student works). */
async function preparedOnly() {
  const prepared = await prepareJudge(judge);
  try {
    const started = performance.now();
    const verdict = await gradeSubmission({ judge: prepared, submissionDir: custody, hiddenDir: hidden });
    const ms = performance.now() - started;
    if (verdict.status !== 'passed') throw new Error(`unexpected verdict ${JSON.stringify(verdict)}`);
    return ms;
  } finally {
    await prepared.dispose();
  }
}

async function judgeOnly() {
  const started = performance.now();
  const verdict = await gradeSubmission({ judge, submissionDir: custody, hiddenDir: hidden });
  const ms = performance.now() - started;
  if (verdict.status !== 'passed') throw new Error(`unexpected verdict ${JSON.stringify(verdict)}`);
  return ms;
}

try {
  direct();
  await full();
  const d = [];
  const f = [];
  const j = [];
  const p = [];
  const phases = { reapMs: [], reclaimMs: [], custodyMs: [], judgeMs: [] };
  for (let run = 0; run < RUNS; run += 1) {
    d.push(direct());
    const r = await full();
    f.push(r.ms);
    for (const key of Object.keys(phases)) phases[key].push(r.timings[key]);
    j.push(await judgeOnly());
    p.push(await preparedOnly());
  }
  const rows = [
    {
      step: 'baseline: node grader.mjs directly',
      'median (ms)': Math.round(median(d)),
      'ratio vs baseline': 1,
    },
    {
      step: 'gradeSubmission (sandboxed judge only)',
      'median (ms)': Math.round(median(j)),
      'ratio vs baseline': Number((median(j) / median(d)).toFixed(1)),
    },
    {
      step: 'gradeSubmission, judge prepared ahead',
      'median (ms)': Math.round(median(p)),
      'ratio vs baseline': Number((median(p) / median(d)).toFixed(1)),
    },
    {
      step: 'collectAndGrade (reap+reclaim+custody+judge)',
      'median (ms)': Math.round(median(f)),
      'ratio vs baseline': Number((median(f) / median(d)).toFixed(1)),
    },
  ];
  console.table(rows);
  console.table(
    Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, { 'median (ms)': Math.round(median(v)) }])),
  );
  console.log(
    `node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model}), runs=${RUNS}, medians`,
  );
} finally {
  spawnSync('/usr/bin/setpriv', [
    '--reuid',
    String(uid),
    '--regid',
    String(uid),
    '--clear-groups',
    '/bin/kill',
    '-KILL',
    '-1',
  ]);
  fs.rmSync(base, { recursive: true, force: true });
}
