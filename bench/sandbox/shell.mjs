// One command in the persistent shell, for two builds of the package side by side (interleaved
// in one process, so both see the same load), and a plain `bash -c` as the named baseline.
// Run as root after `pnpm --filter @karotte/sandbox build`:
//   node bench/sandbox/shell.mjs [<dist/index.js of another build> ...]
// Each build gets a sandbox; every round runs `echo hi` in each, then one plain spawn. Then each
// shell gets a state (200 variables, 20 functions) and runs 100 more. KAROTTE_BENCH_ROUNDS sets
// the rounds (default 200).
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const builds = [
  new URL('../../packages/sandbox/dist/index.js', import.meta.url).pathname,
  ...process.argv.slice(2),
];
const rounds = Number(process.env.KAROTTE_BENCH_ROUNDS ?? 200);
const MiB = 1024 * 1024;
const LIMITS = { diskBytes: 16 * MiB, memoryBytes: 256 * MiB, pids: 128 };
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function plain(argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.resume();
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', resolve);
  });
}
async function time(fn) {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

console.log(`load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cpus`);
const boxes = [];
try {
  for (const build of builds) {
    const { createSandbox } = await import(pathToFileURL(path.resolve(build)).href);
    const box = await createSandbox({ limits: LIMITS });
    await box.exec('true');
    boxes.push(box);
  }
  const fresh = boxes.map(() => []);
  const baseline = [];
  for (let i = 0; i < rounds; i += 1) {
    for (const [j, box] of boxes.entries()) fresh[j].push(await time(() => box.exec('echo hi')));
    baseline.push(await time(() => plain(['/usr/bin/bash', '-c', 'echo hi'])));
  }
  for (const box of boxes) {
    await box.exec(
      'for i in $(seq 200); do eval "v$i=value$i"; done; for i in $(seq 20); do eval "f$i() { echo $i; }"; done',
    );
  }
  const loaded = boxes.map(() => []);
  for (let i = 0; i < Math.ceil(rounds / 2); i += 1) {
    for (const [j, box] of boxes.entries()) loaded[j].push(await time(() => box.exec('echo hi')));
  }
  const base = median(baseline);
  console.log(`baseline: plain bash -c 'echo hi'   ${base.toFixed(2)} ms`);
  for (const [j, build] of builds.entries()) {
    console.log(
      `${build}\n  echo hi in the persistent shell       ${median(fresh[j]).toFixed(2)} ms   ratio ${(median(fresh[j]) / base).toFixed(1)}x` +
        `\n  the same with 200 variables, 20 functions ${median(loaded[j]).toFixed(2)} ms   ratio ${(median(loaded[j]) / base).toFixed(1)}x`,
    );
  }
} finally {
  for (const box of boxes) await box.destroy();
}
