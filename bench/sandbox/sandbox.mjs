// Sandbox cost, side by side with a plain spawn of the same command (the named baseline).
// Run as root after `pnpm --filter @karotte/sandbox build`:  node bench/sandbox/sandbox.mjs
// KAROTTE_BENCH_RUNS (default 7) sets the runs of (a) and (d); KAROTTE_BENCH_DIST points at
// another build of the package (to compare two versions on the same machine at the same time).
import { spawn } from 'node:child_process';
import os from 'node:os';
import { pathToFileURL } from 'node:url';

const dist = process.env.KAROTTE_BENCH_DIST
  ? pathToFileURL(process.env.KAROTTE_BENCH_DIST).href
  : new URL('../../packages/sandbox/dist/index.js', import.meta.url).href;
const { createSandbox } = await import(dist);

const MiB = 1024 * 1024;
// nofile 512: 16 sandboxes at once fit this host's file-table budget (admission: pids × nofile).
const LIMITS = { diskBytes: 16 * MiB, memoryBytes: 256 * MiB, pids: 128, nofile: 512 };
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
    `${name.padEnd(46)} sandbox ${sandboxMs.toFixed(2).padStart(9)} ms   ${baseline.padEnd(18)} ${baselineMs.toFixed(2).padStart(8)} ms   ratio ${(sandboxMs / baselineMs).toFixed(1)}x`,
  );
}

console.log(`${dist}  load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cpus`);

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

// (d) a multi-step task's next step: reap every process, then the next command (which
// rebuilds the world around the same files) vs one plain `bash -c`.
const d = [];
const dBase = [];
if (typeof box.restart === 'function') {
  for (let i = 0; i < runs; i += 1) {
    await box.reap();
    d.push(await time(() => box.exec('echo hi')));
    dBase.push(await time(() => plain(['/usr/bin/bash', '-c', 'echo hi'])));
  }
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
if (d.length > 0)
  row('(d) next step after a reap: rebuild + command', median(d), median(dBase), 'plain bash -c');
console.log(`load average ${os.loadavg()[0].toFixed(1)}`);
