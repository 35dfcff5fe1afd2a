#!/usr/bin/env node
// The README's test command after setup: every check the project has, in order, then the
// whole test suite on this machine's Node.js and on Node.js 24. Prints one closing line
// `tests: N passed, N failed, N skipped` summed over every run.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { spawnSync } from 'node:child_process';
import {
  NODE_MAJORS,
  log,
  pinnedNode,
  pnpmPath,
  reexecOnSupportedNode,
  root,
  run,
  toolEnv,
} from './tools.mjs';

await reexecOnSupportedNode();
const pnpm = pnpmPath();
const only = process.argv.slice(2);
const want = (step) => only.length === 0 || only.includes(step);

if (want('lint')) {
  run(pnpm, ['exec', 'turbo', 'run', 'lint', 'typecheck', '--output-logs=errors-only']);
  run(process.execPath, ['scripts/check-layers.mjs']);
  run(process.execPath, ['scripts/check-readmes.mjs']);
  run(process.execPath, ['scripts/check-docs.mjs']);
  run(pnpm, ['exec', 'prettier', '--check', '.', '--log-level', 'warn']);
  // The shell programs the packages run (src/**/programs/*.sh, inlined into their bundles) and CI's own script.
  run(shellcheck(), [...shellPrograms(), '.ci/run']);
  // Unused files, exports and dependencies (knip); one monorepo shape (sherif).
  run(pnpm, ['exec', 'knip', '--no-progress']);
  run(pnpm, ['exec', 'sherif']);
}
if (want('packages')) {
  run(pnpm, ['exec', 'turbo', 'run', 'check:package', '--output-logs=errors-only']);
  // Every publishable package packed and installed alone with npm, outside the workspace.
  run(process.execPath, ['scripts/check-install.mjs']);
  run(pnpm, ['exec', 'changeset', 'status']);
}

/** shellcheck from the system (Debian package `shellcheck`); exits with a clear message without it. */
function shellcheck() {
  const found = spawnSync('shellcheck', ['--version'], { env: toolEnv(), stdio: 'ignore' });
  if (found.error !== undefined || found.status !== 0) {
    log('shellcheck is missing: install the Debian package shellcheck (apt-get install shellcheck)');
    process.exit(1);
  }
  return 'shellcheck';
}

/** Every `.sh` file under packages/<name>/src, relative to the root. */
function shellPrograms() {
  const packages = path.join(root, 'packages');
  return fs.readdirSync(packages).flatMap((name) => {
    const src = path.join(packages, name, 'src');
    if (!fs.existsSync(src)) return [];
    return fs
      .readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.sh'))
      .map((file) => path.join('packages', name, 'src', file))
      .sort();
  });
}

const totals = { passed: 0, failed: 0, skipped: 0 };
let failedRuns = 0;
// Failures are repeated at the very end, after the counts' line, so that a log cut to its
// tail (as CI systems keep it) still names what failed and why.
const failures = [];

function vitest(node, label) {
  const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-vitest-')), 'report.json');
  log(`vitest on Node.js ${label}`);
  const result = spawnSync(
    node,
    [
      path.join(root, 'node_modules', 'vitest', 'vitest.mjs'),
      'run',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${report}`,
    ],
    {
      cwd: root,
      stdio: 'inherit',
      env: toolEnv(node),
    },
  );
  if (result.status !== 0) failedRuns += 1;
  const failuresBefore = failures.length;
  if (fs.existsSync(report)) {
    const data = JSON.parse(fs.readFileSync(report, 'utf8'));
    totals.passed += data.numPassedTests ?? 0;
    totals.failed += data.numFailedTests ?? 0;
    totals.skipped += (data.numPendingTests ?? 0) + (data.numTodoTests ?? 0);
    if ((data.numTotalTests ?? 0) === 0) {
      failedRuns += 1;
      failures.push({ label, name: 'the vitest run found no test', message: report });
    }
    for (const file of data.testResults ?? []) {
      const relative = path.relative(root, file.name ?? '');
      if (file.status === 'failed' && (file.assertionResults ?? []).length === 0) {
        failures.push({ label, name: relative, message: file.message ?? '' });
      }
      for (const test of file.assertionResults ?? []) {
        if (test.status !== 'failed') continue;
        failures.push({
          label,
          name: `${relative} > ${test.fullName ?? test.title}`,
          message: (test.failureMessages ?? []).join('\n'),
        });
      }
    }
  } else {
    failedRuns += 1;
    failures.push({ label, name: 'the vitest run wrote no report', message: report });
  }
  if (result.status !== 0 && failures.length === failuresBefore) {
    // Named at the end with the failures: a run can fail with every test passed (an unhandled
    // error or rejection, a worker that died), and a log cut to its tail would otherwise show
    // only passing counts.
    const how =
      result.signal === null ? `exited with status ${result.status}` : `was killed by ${result.signal}`;
    failures.push({
      label,
      name: `the vitest run ${how} with no test failed`,
      message: result.error?.message ?? 'see the run above for "Unhandled Errors"',
    });
  }
  fs.rmSync(path.dirname(report), { recursive: true, force: true });
}

// The suite runs once on each supported major: on this node for its own major, on the pinned
// binary (installed on first use) for the others. `test` alone runs on this node only.
const thisMajor = process.versions.node.split('.')[0];
const runs = [{ step: 'test', node: process.execPath, label: process.versions.node }];
for (const major of NODE_MAJORS) {
  if (major === thisMajor) continue;
  runs.push({ step: `test${major}`, node: () => pinnedNode(major, { install: true }), label: major });
}
let ranTests = false;
for (const { step, node, label } of runs) {
  if (!want(step)) continue;
  ranTests = true;
  vitest(typeof node === 'function' ? node() : node, label);
}

if (ranTests) {
  for (const failure of failures) {
    const lines = failure.message.split('\n').slice(0, 12).join('\n    ');
    process.stdout.write(`FAILED (Node.js ${failure.label}) ${failure.name}\n    ${lines}\n`);
  }
  process.stdout.write(
    `tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n`,
  );
  if (failedRuns > 0 || totals.failed > 0) process.exit(1);
}
