import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from './main.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
  });
  return { code, out, err };
}

function base(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-init-'));
  made.push(dir);
  return dir;
}

describe('karotte init', () => {
  it.each(['js', 'python'])('scaffolds a task with a %s grader that validate accepts', async (grader) => {
    const dir = path.join(base(), `My Task_${grader}`);
    const init = await run(['init', dir, '--grader', grader]);
    expect(init.code).toBe(0);
    const files = fs.readdirSync(dir).sort();
    expect(files).toEqual(
      [
        'README.md',
        'attacks',
        'control.json',
        grader === 'js' ? 'grade.mjs' : 'grade.py',
        'hidden',
        'student',
        'task.json',
      ].sort(),
    );
    const validated = await run(['validate', '--task', dir, '--json']);
    expect(validated.code).toBe(0);
    expect(JSON.parse(validated.out)).toMatchObject({
      valid: true,
      id: `my-task-${grader}`,
      submission: ['answer.txt'],
    });
    const task = JSON.parse(fs.readFileSync(path.join(dir, 'task.json'), 'utf8')) as {
      grader: Record<string, unknown>;
    };
    expect(task.grader).toEqual(
      grader === 'js'
        ? { script: 'grade.mjs', timeoutMs: 30000 }
        : { command: ['python3', 'grade.py'], timeoutMs: 30000 },
    );
    expect(fs.readFileSync(path.join(dir, 'README.md'), 'utf8')).toContain('Fill in');
  });

  it('refuses a directory that exists and is not empty (exit 2), and a bad --grader', async () => {
    const dir = base();
    fs.writeFileSync(path.join(dir, 'keep.txt'), 'mine\n');
    const refused = await run(['init', dir]);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/exists and is not empty/u);
    expect(fs.readdirSync(dir)).toEqual(['keep.txt']);
    expect((await run(['init', path.join(dir, 'x'), '--grader', 'ruby'])).code).toBe(2);
    // An empty directory is fine.
    const empty = path.join(dir, 'empty');
    fs.mkdirSync(empty);
    expect((await run(['init', empty])).code).toBe(0);
  });
});

describe('karotte validate explains the mistakes a newcomer makes in a scaffolded task', () => {
  const cases: [string, (task: Record<string, unknown>, dir: string) => void, string, RegExp][] = [
    ['a misspelt field', (t) => (t['instructons'] = 'x'), 'instructons', /fix its spelling/u],
    ['an id with capitals', (t) => (t['id'] = 'My Task'), 'id', /lowercase letters/u],
    [
      'a grader file renamed',
      (_t, dir) => {
        fs.renameSync(path.join(dir, 'grade.mjs'), path.join(dir, 'grader.mjs'));
      },
      'grader.script',
      /create the grader file/u,
    ],
    [
      'both script and command',
      (t) => ((t['grader'] as Record<string, unknown>)['command'] = ['python3', 'grade.py']),
      'grader.command',
      /keep one of/u,
    ],
    [
      'an absolute submission',
      (t) => (t['submission'] = ['/tmp/answer.txt']),
      'submission[0]',
      /relative to the student/u,
    ],
    [
      'a missing image',
      (t) => (t['environment'] = { image: 'no-such-image' }),
      'environment.image',
      /build-debian/u,
    ],
    [
      'a bad digest pin',
      (t) => (t['environment'] = { image: 'x', digest: 'sha256:abc' }),
      'environment.digest',
      /pin the digest/u,
    ],
  ];
  it.each(cases)('%s', async (_name, mistake, field, advice) => {
    const dir = path.join(base(), 'task');
    expect((await run(['init', dir])).code).toBe(0);
    const file = path.join(dir, 'task.json');
    const task = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    mistake(task, dir);
    fs.writeFileSync(file, JSON.stringify(task));
    const result = await run(['validate', '--task', dir, '--json']);
    expect(result.code).toBe(2);
    const report = JSON.parse(result.out) as { field: string; advice: string | null };
    expect(report.field).toBe(field);
    expect(report.advice).toMatch(advice);
    expect(result.err).toContain('what to do:');
  });

  it('a task.json that is not JSON', async () => {
    const dir = path.join(base(), 'task');
    expect((await run(['init', dir])).code).toBe(0);
    fs.writeFileSync(path.join(dir, 'task.json'), '{"id": "x",}');
    const result = await run(['validate', '--task', dir]);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/what to do: task\.json must be valid JSON/u);
  });
});
