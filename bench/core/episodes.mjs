#!/usr/bin/env node
// Episodes per minute of the quarterly-revenue control, through @karotte/core with every
// defense on, at concurrency 1, 4 and 16, side by side with a naive harness of the same task
// (no defenses: spawn bash as root in a temp dir, copy the student file, run the control's
// commands, run the grader with node). The ratio is the price of safety; the median wall time
// of one episode is printed beside it.
//
// The plain column makes every sandbox cold and prepares each step's judge when the step
// starts; the pooled one takes sandboxes and prepared judges (the grader's world made ahead)
// from a SandboxWorldPool.
//
//   pnpm build && node bench/core/episodes.mjs [--episodes N] [--levels 1,4,16]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createReplayAgent,
  createSandboxWorld,
  createSandboxWorldPool,
  loadTask,
  runEpisode,
} from '../../packages/core/dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const taskDir = path.resolve(here, '../../apps/karotte/examples/quarterly-revenue');
const control = JSON.parse(fs.readFileSync(path.join(taskDir, 'control.json'), 'utf8'));
const commands = control.flatMap((m) =>
  (m.tool_calls ?? []).map((c) => JSON.parse(c.function.arguments).command),
);
const perLevel = Number(process.argv[process.argv.indexOf('--episodes') + 1]) || 16;
const levelsArg = process.argv.indexOf('--levels');
const levels = levelsArg === -1 ? [1, 4, 16] : process.argv[levelsArg + 1].split(',').map(Number);

async function karotteEpisode(task, createWorld = createSandboxWorld, prepareJudge) {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-core-'));
  try {
    const result = await runEpisode(task, createReplayAgent(control), {
      outDir: out,
      createWorld,
      ...(prepareJudge === undefined ? {} : { prepareJudge }),
    });
    if (result.status !== 'passed')
      throw new Error(`control did not pass: ${JSON.stringify(result.error ?? result.misbehavior)}`);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}

async function naiveEpisode() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-naive-'));
  try {
    const work = path.join(dir, 'work');
    fs.cpSync(path.join(taskDir, 'student'), work, { recursive: true });
    for (const command of commands) {
      await run('/bin/bash', ['-c', command], { cwd: work });
    }
    const score = path.join(dir, 'score.json');
    await run(process.execPath, [path.join(taskDir, 'grade.mjs')], {
      env: {
        KAROTTE_SUBMISSION_DIR: work,
        KAROTTE_HIDDEN_DIR: path.join(taskDir, 'hidden'),
        KAROTTE_SCORE_FILE: score,
      },
    });
    if (JSON.parse(fs.readFileSync(score, 'utf8')).score !== 1) throw new Error('naive control did not pass');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function run(command, args, options) {
  return new Promise((resolve, reject) => {
    import('node:child_process').then(({ spawn }) => {
      const child = spawn(command, args, { stdio: 'ignore', ...options });
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}`))));
      child.on('error', reject);
    });
  });
}

/** Episodes per minute at `concurrency`, and the median wall time of one episode in ms. */
async function throughput(concurrency, once) {
  let next = 0;
  const durations = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < perLevel) {
        next += 1;
        const t0 = performance.now();
        await once();
        durations.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  durations.sort((a, b) => a - b);
  return { perMinute: (perLevel / seconds) * 60, medianMs: durations[Math.floor(durations.length / 2)] };
}

if (process.getuid() !== 0) {
  console.error('bench/core needs root (real sandboxes)');
  process.exit(1);
}
spawnSync('true');
const task = await loadTask(taskDir);
await karotteEpisode(task); // warm-up
await naiveEpisode();
console.log(`node ${process.version}, ${os.cpus().length} cores, ${perLevel} episodes per level`);
console.log(
  'concurrency | karotte episodes/min | karotte, warm pool | naive episodes/min | naive / karotte | naive / pooled | karotte median ms | pooled median ms | naive median ms',
);
for (const concurrency of levels) {
  const karotte = await throughput(concurrency, () => karotteEpisode(task));
  // One pool per level, made (and filled) before the clock starts, drained after it stops. At
  // most 2 strong: every waiting sandbox holds an admission reservation (this task's pids x
  // nofile open files), and the host's file budget admits only about 7 of this task at once.
  const size = Math.min(concurrency, 2);
  const pool = createSandboxWorldPool({ size });
  await karotteEpisode(task, pool.createWorld, pool.prepareJudge);
  while (pool.stats().idle < size || pool.judgeStats().idle < size)
    await new Promise((resolve) => setTimeout(resolve, 20));
  const pooled = await throughput(concurrency, () =>
    karotteEpisode(task, pool.createWorld, pool.prepareJudge),
  );
  const stats = pool.stats();
  const judgeStats = pool.judgeStats();
  await pool.close();
  const naive = await throughput(concurrency, naiveEpisode);
  console.log(
    [
      String(concurrency).padStart(11),
      karotte.perMinute.toFixed(1).padStart(20),
      pooled.perMinute.toFixed(1).padStart(18),
      naive.perMinute.toFixed(1).padStart(18),
      `${(naive.perMinute / karotte.perMinute).toFixed(1)}x`.padStart(15),
      `${(naive.perMinute / pooled.perMinute).toFixed(1)}x`.padStart(14),
      karotte.medianMs.toFixed(0).padStart(17),
      pooled.medianMs.toFixed(0).padStart(16),
      naive.medianMs.toFixed(0).padStart(15),
      `(pool: ${stats.warm} warm, ${stats.cold} cold, ${stats.discarded} discarded; judges: ${judgeStats.warm} warm, ${judgeStats.cold} cold)`,
    ].join(' | '),
  );
}
