// Grader for roman-numerals (contract section 4). The student's code is never loaded into
// this process: it runs in a child Node.js under the permission model (it may read only the
// submission directory: no writes, no child processes, no workers), with an empty
// environment, fed the hidden inputs on stdin. Only plain JSON data comes back, and this
// process compares it: objects with tricky valueOf/toString/toJSON, an early exit(0), or a
// patched runner inside the child gain nothing, since the expected values never leave here.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const submissionDir = process.env.KAROTTE_SUBMISSION_DIR;
const hiddenDir = process.env.KAROTTE_HIDDEN_DIR;
const scoreFile = process.env.KAROTTE_SCORE_FILE;

function finish(score, metadata) {
  fs.writeFileSync(scoreFile, JSON.stringify({ score, metadata }));
  process.exit(0);
}

const cases = JSON.parse(fs.readFileSync(path.join(hiddenDir, 'cases.json'), 'utf8'));
const solution = path.join(submissionDir, 'solution.mjs');
if (!fs.existsSync(solution)) finish(0, { reason: 'no solution.mjs submitted' });

// Runs inside the child: import the solution, call it on each input, print one JSON line.
const runner = `
const inputs = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
import(${JSON.stringify(`file://${solution}`)}).then((mod) => {
  const results = inputs.map((n) => {
    try {
      const value = mod.toRoman(n);
      return typeof value === 'string' ? { ok: value } : { bad: typeof value };
    } catch (error) {
      return { threw: String(error && error.message).slice(0, 200) };
    }
  });
  process.stdout.write(JSON.stringify(results));
});
`;
// `--permission` from Node.js 22.13 and 23.5; `--experimental-permission` before (20.x, 22.12).
const permission = process.allowedNodeEnvironmentFlags.has('--permission')
  ? '--permission'
  : '--experimental-permission';
const child = spawnSync(
  process.execPath,
  [permission, `--allow-fs-read=${submissionDir}`, '--no-warnings', '--input-type=commonjs', '-e', runner],
  {
    input: JSON.stringify(cases.map((c) => c.input)),
    env: {},
    cwd: submissionDir,
    timeout: 10_000,
    maxBuffer: 4 * 1024 * 1024,
    encoding: 'utf8',
  },
);

let results;
try {
  results = JSON.parse(child.stdout);
} catch {
  finish(0, { reason: 'the solution produced no results', exitCode: child.status, signal: child.signal });
}
if (!Array.isArray(results) || results.length !== cases.length) {
  finish(0, { reason: 'the solution produced the wrong number of results' });
}
let passed = 0;
const failures = [];
cases.forEach((c, i) => {
  const r = results[i];
  if (r !== null && typeof r === 'object' && typeof r.ok === 'string' && r.ok === c.expected) passed += 1;
  else if (failures.length < 5) failures.push(`toRoman(${c.input})`);
});
finish(passed / cases.length, { passed, total: cases.length, failures });
