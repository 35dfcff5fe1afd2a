import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from './main.js';

const examples = path.resolve(import.meta.dirname, '../examples');
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

describe('karotte validate', () => {
  it.each(['quarterly-revenue', 'roman-numerals'])('accepts the %s example', async (name) => {
    const result = await run(['validate', '--task', path.join(examples, name), '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.out)).toMatchObject({ valid: true, id: name, steps: 1 });
  });

  it('exits 2 naming the field of an invalid task', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-validate-'));
    made.push(dir);
    fs.writeFileSync(path.join(dir, 'grade.mjs'), '');
    fs.writeFileSync(
      path.join(dir, 'task.json'),
      JSON.stringify({
        id: 'x',
        instructions: 'i',
        submission: ['a'],
        grader: { script: 'grade.mjs' },
        limits: { pids: -3 },
      }),
    );
    const result = await run(['validate', '--task', dir]);
    expect(result.code).toBe(2);
    expect(result.err).toContain('limits.pids');
    expect(result.err).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('exits 2 on a missing flag, an unknown flag and a missing directory', async () => {
    expect((await run(['validate'])).err).toContain('missing required flag --task');
    const unknown = await run(['validate', '--task', 'x', '--frob']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('--frob');
    const missing = await run(['validate', '--task', '/nonexistent/karotte']);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('does not exist');
  });

  it('prints its help', async () => {
    const result = await run(['validate', '--help']);
    expect(result.code).toBe(0);
    expect(result.out).toContain('Usage: karotte validate');
  });
});
