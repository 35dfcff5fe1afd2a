// The red-team catalog against both examples (every attack must score 0 and each control
// pass), and the proof that it can fail: a deliberately weakened copy of an example (answer
// key leaked into the student's files, a grader that trusts a score claimed in the
// submission) lets specific attacks through, and the command reports them and exits 1.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const app = path.resolve(import.meta.dirname, '..');
const cli = path.join(app, 'dist', 'cli.js');

interface Row {
  id: string;
  kind: string;
  status: string;
  score: number;
  reason: string;
  ok: boolean;
  asExpected: boolean;
  expected: string[] | null;
}

function redteam(
  task: string,
  extra: string[] = [],
): { status: number | null; rows: Row[]; ok: boolean; stderr: string } {
  const child = spawnSync(process.execPath, [cli, 'redteam', '--task', task, '--json', ...extra], {
    encoding: 'utf8',
    timeout: 900_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const report = JSON.parse(child.stdout) as { ok: boolean; rows: Row[] };
  return { status: child.status, rows: report.rows, ok: report.ok, stderr: child.stderr };
}

describe('karotte redteam', () => {
  it.each(['quarterly-revenue', 'roman-numerals'])(
    'every catalog attack scores 0 against %s and its control passes',
    (name) => {
      const r = redteam(path.join(app, 'examples', name));
      const bad = r.rows
        .filter((row) => !row.ok)
        .map((row) => `${row.id}: ${row.status} ${row.score} ${row.reason}`);
      expect(bad).toEqual([]);
      // And each was stopped by the defense it expects (its declared outcome).
      const unexpected = r.rows
        .filter((row) => row.kind === 'attack' && !row.asExpected)
        .map((row) => `${row.id}: ${row.reason} (expected ${(row.expected ?? []).join('|')})`);
      expect(unexpected).toEqual([]);
      expect(r.status).toBe(0);
      expect(r.rows.filter((row) => row.kind === 'attack').length).toBeGreaterThanOrEqual(40);
      expect(r.rows.find((row) => row.kind === 'control')).toMatchObject({ status: 'passed', score: 1 });
      // Nothing the student does turns a run into `error`.
      expect(r.rows.filter((row) => row.status === 'error')).toEqual([]);
    },
    1_200_000,
  );

  it('reports the attacks that succeed against a weakened task and exits 1', () => {
    const r = redteam(path.join(app, 'test', 'fixtures', 'weakened-revenue'), [
      '--only',
      'find-answer-key,score-in-submission,fifo,planted-score-files',
    ]);
    expect(r.status).toBe(1);
    expect(r.ok).toBe(false);
    const byId = Object.fromEntries(r.rows.map((row) => [row.id, row]));
    expect(byId['find-answer-key']).toMatchObject({ status: 'passed', score: 1, ok: false });
    expect(byId['score-in-submission']).toMatchObject({ status: 'passed', score: 1, ok: false });
    // The defenses that do not depend on the task's own mistakes still hold.
    expect(byId['fifo']).toMatchObject({ status: 'failed', score: 0, ok: true });
    expect(byId['planted-score-files']).toMatchObject({ status: 'failed', score: 0, ok: true });
    expect(byId['control']).toMatchObject({ status: 'passed', ok: true });
  }, 600_000);

  it('exits 2 for an unknown attack id', () => {
    const child = spawnSync(
      process.execPath,
      [cli, 'redteam', '--task', path.join(app, 'examples', 'quarterly-revenue'), '--only', 'no-such-attack'],
      { encoding: 'utf8' },
    );
    expect(child.status).toBe(2);
    expect(child.stderr).toContain('no-such-attack');
  });

  it('exits 2 for a malformed attacks/*.json, naming the file and the field, before any run', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-redteam-bad-'));
    try {
      fs.cpSync(path.join(app, 'examples', 'quarterly-revenue'), dir, { recursive: true });
      fs.mkdirSync(path.join(dir, 'attacks'));
      fs.writeFileSync(
        path.join(dir, 'attacks', 'broken.json'),
        JSON.stringify({ id: 'x', class: 'answer-key' }),
      );
      fs.writeFileSync(path.join(dir, 'attacks', 'not-json.json'), '{');
      const out = path.join(dir, 'out');
      const child = spawnSync(process.execPath, [cli, 'redteam', '--task', dir, '--out', out], {
        encoding: 'utf8',
      });
      expect(child.status).toBe(2);
      expect(child.stderr).toContain('attacks/broken.json is not a valid attack (field ');
      // Nothing ran: no episode wrote anything.
      expect(fs.readdirSync(out)).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
