// How the red-team tests run the real CLI: `karotte redteam --json` on a task, its report parsed.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const app = path.resolve(import.meta.dirname, '..');
/** The built CLI the tests run. */
export const cli = path.join(app, 'dist', 'cli.js');

/** One row of the report: an attack (or the control) and what stopped it. */
export interface Row {
  id: string;
  class: string;
  kind: string;
  status: string;
  score: number;
  reason: string;
  ok: boolean;
  asExpected: boolean;
  expected: string[] | null;
  neighbour?: { status: string; score: number; ok: boolean; overlapped: boolean; reason: string };
  seed?: { status: string; score: number };
}

/** `karotte redteam --task <task> --json [...extra]`, its exit status and parsed report. */
export function redteam(
  task: string,
  extra: string[] = [],
): { status: number | null; rows: Row[]; ok: boolean; stderr: string } {
  const child = spawnSync(process.execPath, [cli, 'redteam', '--task', task, '--json', ...extra], {
    encoding: 'utf8',
    timeout: 1_200_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const report = JSON.parse(child.stdout) as { ok: boolean; rows: Row[] };
  return { status: child.status, rows: report.rows, ok: report.ok, stderr: child.stderr };
}
