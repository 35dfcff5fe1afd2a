// Sandbox cost, side by side with a plain spawn of the same command (the named baseline).
// Run as root after `pnpm --filter @karotte/sandbox build`:  node bench/sandbox/sandbox.mjs
import { spawn } from 'node:child_process';
import { createSandbox } from '../../packages/sandbox/dist/index.js';

const MiB = 1024 * 1024;
const LIMITS = { diskBytes: 16 * MiB, memoryBytes: 256 * MiB, pidsMax: 128 };
const runs = Number(process.env.KAROTTE_BENCH_RUNS ?? 7);

function plain(argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.resume();
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', resolve);
  });
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
async function time(fn) {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}
function row(name, sandboxMs, baselineMs, baseline) {
  console.log(
    `${name.padEnd(44)} sandbox ${sandboxMs.toFixed(2).padStart(9)} ms   ${baseline.padEnd(22)} ${baselineMs.toFixed(2).padStart(8)} ms   ratio ${(sandboxMs / baselineMs).toFixed(1)}x`,
  );
}

// (a) create + first command + teardown vs one plain `bash -c 'echo hi'`.
const a = [];
const aBase = [];
for (let i = 0; i < runs; i += 1) {
  a.push(
    await time(async () => {
      const box = await createSandbox({ limits: LIMITS });
      await box.exec('echo hi');
      await box.destroy();
    }),
  );
  aBase.push(await time(() => plain(['/usr/bin/bash', '-c', 'echo hi'])));
}
row('(a) create + first command + teardown', median(a), median(aBase), 'plain bash -c');

// (b) one command in the persistent shell vs a fresh `bash -c` per command.
const box = await createSandbox({ limits: LIMITS });
await box.exec('true');
const b = [];
const bBase = [];
for (let i = 0; i < 200; i += 1) {
  b.push(await time(() => box.exec('echo hi')));
  bBase.push(await time(() => plain(['/usr/bin/bash', '-c', 'echo hi'])));
}
await box.destroy();
row('(b) one command (persistent shell)', median(b), median(bBase), 'plain bash -c');

// (c) 16 sandboxes at once: create, one command each, teardown; vs 16 plain spawns at once.
const c = [];
const cBase = [];
for (let i = 0; i < Math.max(3, Math.floor(runs / 2)); i += 1) {
  c.push(
    await time(async () => {
      const boxes = await Promise.all(Array.from({ length: 16 }, () => createSandbox({ limits: LIMITS })));
      await Promise.all(boxes.map((one) => one.exec('echo hi')));
      await Promise.all(boxes.map((one) => one.destroy()));
    }),
  );
  cBase.push(
    await time(() =>
      Promise.all(Array.from({ length: 16 }, () => plain(['/usr/bin/bash', '-c', 'echo hi']))),
    ),
  );
}
row('(c) 16 concurrent create + command + teardown', median(c), median(cBase), '16 plain bash -c');
