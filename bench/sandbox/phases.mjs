// Where one sandbox's time goes (create, network check, first command, teardown), cold and from
// the warm pool (createSandboxPool), with a plain
// `bash -c` spawn as the named baseline. Give a second build in KAROTTE_BENCH_DIST_B to compare
// two versions round by round (interleaved, so both see the same machine load).
// Run as root after `pnpm --filter @karotte/sandbox build`:  node bench/sandbox/phases.mjs
import { spawn } from 'node:child_process';
import os from 'node:os';
import { pathToFileURL } from 'node:url';

const builds = [
  ['this build', new URL('../../packages/sandbox/dist/index.js', import.meta.url).href],
  ...(process.env.KAROTTE_BENCH_DIST_B
    ? [['build B', pathToFileURL(process.env.KAROTTE_BENCH_DIST_B).href]]
    : []),
];
const modules = await Promise.all(builds.map(([, url]) => import(url)));
const MiB = 1024 * 1024;
const LIMITS = { diskBytes: 16 * MiB, memoryBytes: 256 * MiB, pids: 128 };
const runs = Number(process.env.KAROTTE_BENCH_RUNS ?? 9);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function plain() {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/bash', ['-c', 'echo hi'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.resume();
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', resolve);
  });
}

const phases = builds.map(() => ({ create: [], check: [], exec: [], teardown: [], total: [] }));
const baseline = [];
const loads = [];
for (let round = 0; round < runs; round += 1) {
  // Alternate the order so neither build always runs first.
  const order = modules.map((_, index) => index);
  if (round % 2 === 1) order.reverse();
  for (const index of order) {
    const t0 = performance.now();
    const box = await modules[index].createSandbox({ limits: LIMITS });
    const t1 = performance.now();
    await box.exec('echo hi');
    const t2 = performance.now();
    await box.destroy();
    const t3 = performance.now();
    const phase = phases[index];
    phase.create.push(t1 - t0);
    phase.check.push(box.networkCheck.durationMs);
    phase.exec.push(t2 - t1);
    phase.teardown.push(t3 - t2);
    phase.total.push(t3 - t0);
  }
  const t = performance.now();
  await plain();
  baseline.push(performance.now() - t);
  loads.push(os.loadavg()[0]);
}
// The warm pool (this build): acquire (a pooled sandbox, re-checked), first command,
// teardown. Taking a sandbox starts the pool's refill (a whole cold create, in the background):
// "refill settled" waits for it after the acquire, off the clock, so the command and the
// teardown run on a quiet machine, as in an episode whose student thinks longer than a create
// takes; "refill beside it" runs them at once, as a tight loop of instant episodes does. The
// two alternate round by round. Every round starts with the pool full.
const pool = modules[0].createSandboxPool({ limits: LIMITS }, { size: 1 });
const pooledPhases = () => ({ acquire: [], exec: [], teardown: [], total: [] });
const pooled = { settled: pooledPhases(), beside: pooledPhases() };
const poolIdle = async () => {
  while (pool.stats().idle < 1) await new Promise((resolve) => setTimeout(resolve, 10));
};
try {
  for (let round = 0; round < 2 * runs; round += 1) {
    const way = round % 2 === 0 ? 'settled' : 'beside';
    await poolIdle();
    const t0 = performance.now();
    const box = await pool.acquire();
    const t1 = performance.now();
    if (way === 'settled') await poolIdle();
    const t2 = performance.now();
    await box.exec('echo hi');
    const t3 = performance.now();
    await box.destroy();
    const t4 = performance.now();
    const phase = pooled[way];
    phase.acquire.push(t1 - t0);
    phase.exec.push(t3 - t2);
    phase.teardown.push(t4 - t3);
    phase.total.push(t1 - t0 + (t4 - t2));
  }
} finally {
  await pool.close();
}
const stats = pool.stats();
const base = median(baseline);
for (const [index, [name, url]] of builds.entries()) {
  const phase = phases[index];
  console.log(
    `${name} (${url}): create + command + teardown ${median(phase.total).toFixed(0)} ms = create ${median(phase.create).toFixed(0)} (network check ${median(phase.check).toFixed(0)}) + first command ${median(phase.exec).toFixed(1)} + teardown ${median(phase.teardown).toFixed(0)}; plain bash -c ${base.toFixed(2)} ms; ratio ${(median(phase.total) / base).toFixed(0)}x`,
  );
}
for (const [way, phase] of Object.entries(pooled)) {
  console.log(
    `warm pool (this build, refill ${way === 'settled' ? 'settled' : 'beside it'}): acquire + command + teardown ${median(phase.total).toFixed(1)} ms = acquire ${median(phase.acquire).toFixed(1)} + first command ${median(phase.exec).toFixed(1)} + teardown ${median(phase.teardown).toFixed(1)}; ratio ${(median(phase.total) / base).toFixed(0)}x`,
  );
}
console.log(`pool: ${stats.warm} warm, ${stats.cold} cold, ${stats.discarded} discarded`);
console.log(
  `${runs} rounds, load average ${Math.min(...loads).toFixed(1)}..${Math.max(...loads).toFixed(1)} on ${os.cpus().length} cpus`,
);
