// Time from a grader exceeding its timeout to the verdict. A sandboxed grader that hangs
// (after starting a setsid grandchild) runs under timeoutMs = T. The judge report's phase
// timings say when the grader started (setupMs), how long it ran until its exit (runMs) and
// how long the teardown took (teardownMs: cgroup proven empty, unmount, removal), so
//   timeout to verdict = (runMs - T) + teardownMs
// Baseline, side by side: the same sandboxed judge with a grader that exits at once, whose
// teardownMs is the floor. Needs root.
//
//   pnpm --filter @karotte/grader build && node bench/grader/timeout-latency.mjs [--runs 9] [--timeout 500]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createExecutableJudge } from '../../packages/grader/dist/index.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const RUNS = arg('--runs', 9);
const T = arg('--timeout', 500);
const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, '..', '..', 'packages', 'grader', 'test', 'fixtures');
if (process.getuid() !== 0) throw new Error('run as root: the benchmark uses the grader sandbox');

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-grader-timeout-'));
fs.writeFileSync(path.join(base, 'answer.txt'), '42\n');
fs.mkdirSync(path.join(base, 'hidden'));
fs.writeFileSync(path.join(base, 'hidden', 'key.txt'), '42\n');
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const context = () => ({
  submissionDir: base,
  hiddenDir: path.join(base, 'hidden'),
  finalAnswer: null,
  abortSignal: new AbortController().signal,
  path: 'bench',
});

const hang = createExecutableJudge({ program: path.join(fixtures, 'hang.mjs'), timeoutMs: T });
const quick = createExecutableJudge({ program: path.join(fixtures, 'exit3.mjs'), timeoutMs: T });

async function once(judge, reason) {
  const report = await judge.evaluate(context());
  if (report.failure?.reason !== reason || report.timings === undefined) {
    throw new Error(`unexpected report ${JSON.stringify(report)}`);
  }
  return report.timings;
}

try {
  await once(hang, 'TIMEOUT');
  const kill = [];
  const teardown = [];
  const latency = [];
  const quickTeardown = [];
  for (let run = 0; run < RUNS; run += 1) {
    const t = await once(hang, 'TIMEOUT');
    kill.push(t.runMs - T);
    teardown.push(t.teardownMs);
    latency.push(t.runMs - T + t.teardownMs);
    quickTeardown.push((await once(quick, 'EXIT_CODE')).teardownMs);
  }
  const ms = (v) => Math.round(v * 10) / 10;
  console.table([
    {
      measure: `limit to exit of the killed tree (runMs - ${T})`,
      'median (ms)': ms(median(kill)),
      'max (ms)': ms(Math.max(...kill)),
    },
    {
      measure: 'exit to verdict (teardown)',
      'median (ms)': ms(median(teardown)),
      'max (ms)': ms(Math.max(...teardown)),
    },
    {
      measure: 'timeout to verdict (total)',
      'median (ms)': ms(median(latency)),
      'max (ms)': ms(Math.max(...latency)),
    },
    {
      measure: 'baseline: teardown after a normal exit',
      'median (ms)': ms(median(quickTeardown)),
      'max (ms)': ms(Math.max(...quickTeardown)),
    },
  ]);
  console.log(
    `ratio timeout-to-verdict / normal teardown: ${(median(latency) / median(quickTeardown)).toFixed(2)}`,
  );
  console.log(
    `node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model}), runs=${RUNS}, medians`,
  );
} finally {
  fs.rmSync(base, { recursive: true, force: true });
}
