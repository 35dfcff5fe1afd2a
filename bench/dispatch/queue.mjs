#!/usr/bin/env node
// What the queue adds to an episode, and throughput through it, against the baseline of the
// same episodes run directly with @karotte/core's runEpisode in one process (no Redis), run
// side by side on this machine. A redis-server on loopback (started here, stopped at the end)
// and `karotte worker` processes (the built CLI, concurrency 1 each).
//
//   latency: episodes one at a time through one worker; submit -> start (the job's processedOn
//            minus its timestamp) and finish -> result seen by the client (when
//            waitForResults returns, minus finishedOn); p50 and max.
//   throughput: N episodes submitted at once to 1 and to 2 worker processes; episodes/min,
//            and the ratio to the direct baseline.
//
//   pnpm exec turbo run build --filter karotte && node bench/dispatch/queue.mjs [--episodes N]
// (as root: the episodes run in sandboxes)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createReplayAgent,
  createSandboxWorld,
  loadTask,
  runEpisode,
} from '../../packages/core/dist/index.js';
import { createDispatchClient, parseRedisUrl } from '../../packages/dispatch/dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const cli = path.resolve(here, '../../apps/karotte/dist/cli.js');
const taskDir = path.resolve(here, '../../apps/karotte/examples/quarterly-revenue');
const control = JSON.parse(fs.readFileSync(path.join(taskDir, 'control.json'), 'utf8'));
const n = Number(process.argv[process.argv.indexOf('--episodes') + 1]) || 12;
const latencyN = Math.max(5, Math.min(n, 10));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-dispatch-'));
const children = new Set();

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function start(argv, opts = {}) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  children.add(child);
  child.exited = new Promise((r) =>
    child.once('exit', (code) => {
      children.delete(child);
      r(code);
    }),
  );
  child.log = '';
  child.stdout.on('data', (c) => (child.log += c));
  child.stderr.on('data', (c) => (child.log += c));
  return child;
}

async function stop(child) {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 60_000);
  await child.exited;
  clearTimeout(t);
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function worker(url, queue, name) {
  const w = start([
    process.execPath,
    cli,
    'worker',
    '--redis',
    url,
    '--queue',
    queue,
    '--tasks',
    path.join(dir, 'tasks'),
    '--artifacts',
    path.join(dir, 'art', name),
    '--name',
    name,
    '--no-startup-check',
    '--json',
  ]);
  const deadline = Date.now() + 60_000;
  while (!w.log.includes('"event":"ready"')) {
    if (Date.now() > deadline || w.exitCode !== null) throw new Error(`worker did not start: ${w.log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return w;
}

try {
  fs.mkdirSync(path.join(dir, 'tasks'));
  fs.symlinkSync(taskDir, path.join(dir, 'tasks', 'quarterly-revenue'));
  const port = await freePort();
  const redis = start([
    '/usr/bin/redis-server',
    '--bind',
    '127.0.0.1',
    '--port',
    String(port),
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
  ]);
  await new Promise((r) => setTimeout(r, 500));
  const url = `redis://127.0.0.1:${port}`;
  const client = (queue) => createDispatchClient({ redis: parseRedisUrl(url), queue });

  // Baseline: the same episodes, directly, in this process.
  const task = await loadTask(taskDir);
  let directRuns = 0;
  const direct = async (count) => {
    const t0 = performance.now();
    for (let i = 0; i < count; i += 1) {
      const out = path.join(dir, 'direct', String((directRuns += 1)));
      const r = await runEpisode(task, createReplayAgent(control), {
        outDir: out,
        createWorld: createSandboxWorld,
      });
      if (r.status !== 'passed') throw new Error(`direct control did not pass: ${JSON.stringify(r.error)}`);
    }
    return performance.now() - t0;
  };

  // Latency, one at a time through one worker.
  const lat = client('latency');
  const w0 = await worker(url, 'latency', 'lat-1');
  const toStart = [];
  const toSeen = [];
  for (let i = 0; i < latencyN; i += 1) {
    const [id] = await lat.submit({
      runId: `lat${i}`,
      task: { id: 'quarterly-revenue' },
      agent: { kind: 'replay', messages: control },
    });
    await lat.waitForResults(`lat${i}`, { pollMs: 5_000 });
    const seen = Date.now();
    const job = await lat.queue.getJob(id);
    toStart.push(job.processedOn - job.timestamp);
    toSeen.push(seen - job.finishedOn);
  }
  await stop(w0);
  await lat.close();

  // Throughput through 1 and 2 worker processes, against the baseline, in the order
  // A B C C B A (half the episodes each time) so a machine getting busier or quieter during
  // the run weighs on all three alike.
  let rounds = 0;
  const through = async (workers, count) => {
    const queue = `tp${workers}-${(rounds += 1)}`;
    const c = client(queue);
    const ws = [];
    for (let i = 0; i < workers; i += 1) ws.push(await worker(url, queue, `${queue}-${i}`));
    const s = performance.now();
    await c.submit({
      runId: queue,
      task: { id: 'quarterly-revenue' },
      agent: { kind: 'replay', messages: control },
      n: count,
    });
    const reports = await c.waitForResults(queue, { pollMs: 5_000 });
    const ms = performance.now() - s;
    if (reports.some((r) => r.result?.status !== 'passed')) throw new Error('an episode did not pass');
    for (const w of ws) await stop(w);
    await c.close();
    return ms;
  };
  const half = Math.max(1, Math.floor(n / 2));
  const ms = { direct: 0, one: 0, two: 0 };
  ms.direct += await direct(half);
  ms.one += await through(1, half);
  ms.two += await through(2, half);
  ms.two += await through(2, half);
  ms.one += await through(1, half);
  ms.direct += await direct(half);
  const perMin = (t) => ((2 * half) / t) * 60_000;
  const directPerMin = perMin(ms.direct);
  const one = perMin(ms.one);
  const two = perMin(ms.two);
  await stop(redis);

  const f = (x) => x.toFixed(1);
  console.log(
    `machine: ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node.js ${process.version}, load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log(`queue-added latency over ${latencyN} episodes, one worker:`);
  console.log(`  submit -> start        p50 ${pct(toStart, 50)} ms, max ${Math.max(...toStart)} ms`);
  console.log(`  finish -> result seen  p50 ${pct(toSeen, 50)} ms, max ${Math.max(...toSeen)} ms`);
  console.log(
    `throughput, ${2 * half} episodes each, order A B C C B A (episodes/min; ratio to direct runEpisode in one process):`,
  );
  console.log(`  direct runEpisode, sequential   ${f(directPerMin)}  1.00x`);
  console.log(`  1 worker process                ${f(one)}  ${(one / directPerMin).toFixed(2)}x`);
  console.log(
    `  2 worker processes side by side ${f(two)}  ${(two / directPerMin).toFixed(2)}x  (${(two / one).toFixed(2)}x of 1 worker; 2 cores)`,
  );
} finally {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
}
