// `karotte init` (contract section 11) end to end through the built CLI: for both grader
// languages the scaffolded task validates, its control passes with `karotte run`, and
// `karotte redteam` holds (every attack of the catalog and the task's own scores 0). Slow: a
// whole red-team catalog per language (about 6 minutes each on the project's 2-core VM).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const cli = path.resolve(import.meta.dirname, '..', 'dist', 'cli.js');
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-cli-init-'));
afterAll(() => {
  fs.rmSync(base, { recursive: true, force: true });
});

function karotte(args: readonly string[], timeoutMs = 120_000) {
  const child = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { status: child.status, stdout: child.stdout, stderr: child.stderr };
}

describe('karotte init, then validate, run and redteam', () => {
  it.each(['js', 'python'] as const)(
    'a task with a %s grader works at once',
    (grader) => {
      const dir = path.join(base, `task-${grader}`);
      expect(karotte(['init', dir, '--grader', grader]).status).toBe(0);
      expect(karotte(['validate', '--task', dir]).status).toBe(0);
      const out = path.join(base, `out-${grader}`);
      const run = karotte([
        'run',
        '--task',
        dir,
        '--agent',
        'replay',
        '--replay',
        path.join(dir, 'control.json'),
        '--out',
        out,
      ]);
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(fs.readFileSync(path.join(out, 'result.json'), 'utf8'))).toMatchObject({
        status: 'passed',
        score: 1,
      });
      const redteam = karotte(['redteam', '--task', dir, '--json'], 1_500_000);
      expect(redteam.status, redteam.stdout.slice(-4000)).toBe(0);
      expect(redteam.stdout).toContain(`task-${grader}-read-the-key`);
    },
    1_800_000,
  );
});
