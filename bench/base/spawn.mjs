// Benchmark: starting a short program (`/bin/true`) to its end from a harness that holds more
// and more memory, through runProgram's spawner (a small Perl process forks for the harness)
// side by side with Node.js's own child_process.spawn (the harness forks itself: libuv's fork
// copies the page tables of the whole process). For each harness size: the median wall time of
// one run each way, and how long spawn() itself kept the event loop standing still (the part a
// busy harness pays on every other episode's turn). Alternating, after a warm-up of both.
//
// No root needed. Run: `pnpm --filter @karotte/base build && node bench/base/spawn.mjs`
// (harness sizes in MiB of touched memory as arguments: `node bench/base/spawn.mjs 0 150 400`).
import { spawn } from 'node:child_process';
import { createSpawner } from '../../packages/base/dist/index.js';

const SIZES = process.argv.slice(2).length > 0 ? process.argv.slice(2).map(Number) : [0, 150, 400];
const RUNS = Number(process.env.KAROTTE_BENCH_RUNS ?? 41);
const TRUE = '/bin/true';
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const spawner = createSpawner();
if (spawner.mode !== 'spawner') {
  process.stderr.write('no trusted perl on this host: runProgram spawns directly, nothing to compare\n');
  process.exit(2);
}

function direct() {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(TRUE, [], { env: {}, stdio: ['ignore', 'pipe', 'pipe'] });
    const blocked = performance.now() - started;
    child.stdout.resume();
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', () => resolve({ wall: performance.now() - started, blocked }));
  });
}

async function brokered() {
  const started = performance.now();
  const running = spawner.run([TRUE], { timeoutMs: 10_000 });
  const blocked = performance.now() - started;
  const result = await running;
  if (result.exitCode !== 0) throw new Error(`${TRUE} exited ${result.exitCode ?? result.signal}`);
  return { wall: performance.now() - started, blocked };
}

const ballast = [];
process.stdout.write(
  `Node.js ${process.versions.node}, ${RUNS} runs each way per size, medians (ms)\n` +
    `harness RSS   spawn(): wall  loop blocked   runProgram: wall  loop blocked   wall ratio\n`,
);
for (const mib of SIZES) {
  // Touched memory (every page written), as a harness's heap and buffers are.
  while (ballast.length < mib) ballast.push(Buffer.alloc(1024 * 1024, 1));
  for (let i = 0; i < 5; i += 1) {
    await direct();
    await brokered();
  }
  const runs = { direct: [], brokered: [] };
  for (let i = 0; i < RUNS; i += 1) {
    const order = i % 2 === 0 ? ['direct', 'brokered'] : ['brokered', 'direct'];
    for (const way of order) runs[way].push(way === 'direct' ? await direct() : await brokered());
  }
  const rss = process.memoryUsage().rss / 1024 / 1024;
  const d = {
    wall: median(runs.direct.map((r) => r.wall)),
    blocked: median(runs.direct.map((r) => r.blocked)),
  };
  const b = {
    wall: median(runs.brokered.map((r) => r.wall)),
    blocked: median(runs.brokered.map((r) => r.blocked)),
  };
  process.stdout.write(
    `${`${rss.toFixed(0)} MiB`.padStart(11)}   ${d.wall.toFixed(2).padStart(11)}  ${d.blocked.toFixed(2).padStart(12)}   ${b.wall.toFixed(2).padStart(16)}  ${b.blocked.toFixed(2).padStart(12)}   ${(d.wall / b.wall).toFixed(2).padStart(9)}×\n`,
  );
}
await spawner.close();
