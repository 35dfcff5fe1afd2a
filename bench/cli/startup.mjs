#!/usr/bin/env node
// The CLI's own cost, side by side with what it wraps:
//   1. `karotte --version` (Node.js start + the CLI's imports) against `node -e 0` (Node.js alone);
//   2. `karotte run` of the quarterly-revenue control, the whole process as a user runs it,
//      against the same episode run in-process through @karotte/core (warm, in this process).
// Medians of --runs (default 7), alternating the two sides of each pair.
//
//   npm run setup && node bench/cli/startup.mjs [--runs N]      (root: the episodes are real)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createReplayAgent,
  createSandboxWorld,
  loadTask,
  runEpisode,
} from '../../packages/core/dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const cli = path.join(root, 'apps', 'karotte', 'dist', 'cli.js');
const taskDir = path.join(root, 'apps', 'karotte', 'examples', 'quarterly-revenue');
const controlFile = path.join(taskDir, 'control.json');
const runsAt = process.argv.indexOf('--runs');
const runs = runsAt === -1 ? 7 : Number(process.argv[runsAt + 1]);
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write('usage: node bench/cli/startup.mjs [--runs N]\n');
  process.exit(2);
}
if (process.getuid?.() !== 0) {
  process.stderr.write('the CLI benchmark runs real episodes: run it as root\n');
  process.exit(2);
}
if (!fs.existsSync(cli)) {
  process.stderr.write(`${cli} is missing: run the README's setup first\n`);
  process.exit(2);
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const timed = (argv) => {
  const started = performance.now();
  const child = spawnSync(process.execPath, argv, { encoding: 'utf8', cwd: root });
  const ms = performance.now() - started;
  if (child.status !== 0) {
    throw new Error(`${argv.join(' ')} exited ${child.status}: ${child.stderr.slice(-500)}`);
  }
  return ms;
};

const nodeAlone = [];
const version = [];
for (let i = 0; i < runs + 1; i += 1) {
  const a = timed(['-e', '0']);
  const b = timed([cli, '--version']);
  if (i === 0) continue; // warm-up
  nodeAlone.push(a);
  version.push(b);
}

const task = await loadTask(taskDir);
const control = JSON.parse(fs.readFileSync(controlFile, 'utf8'));
const inProcess = [];
const wholeCli = [];
for (let i = 0; i < runs + 1; i += 1) {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-cli-'));
  try {
    let started = performance.now();
    const result = await runEpisode(task, createReplayAgent(control), {
      outDir: path.join(out, 'in-process'),
      createWorld: createSandboxWorld,
    });
    const a = performance.now() - started;
    if (result.status !== 'passed') throw new Error(`in-process control ${result.status}`);
    started = performance.now();
    const child = spawnSync(
      process.execPath,
      [
        cli,
        'run',
        '--task',
        taskDir,
        '--agent',
        'replay',
        '--replay',
        controlFile,
        '--out',
        path.join(out, 'cli'),
      ],
      { encoding: 'utf8', cwd: root },
    );
    const b = performance.now() - started;
    if (child.status !== 0)
      throw new Error(`karotte run exited ${child.status}: ${child.stderr.slice(-500)}`);
    if (i === 0) continue;
    inProcess.push(a);
    wholeCli.push(b);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}

const rows = [
  ['karotte --version', median(version), 'node -e 0', median(nodeAlone)],
  ['karotte run (control, whole process)', median(wholeCli), 'runEpisode in-process', median(inProcess)],
];
process.stdout.write(
  `Node.js ${process.versions.node}, ${runs} runs each, medians; load ${os.loadavg()[0].toFixed(1)}\n`,
);
for (const [name, ms, baseline, baseMs] of rows) {
  process.stdout.write(
    `${name.padEnd(38)} ${ms.toFixed(0).padStart(6)} ms   ${baseline.padEnd(22)} ${baseMs.toFixed(0).padStart(6)} ms   ${(ms / baseMs).toFixed(2)}×\n`,
  );
}
