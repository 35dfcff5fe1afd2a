// `karotte worker`, `submit` and `results` refuse bad flags with exit 2, naming the flag, before
// anything connects to Redis; a password never comes from the command line.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { main } from './main.js';
import { EXAMPLES_DIR } from './examples.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-dispatch-flags-'));
const open = path.join(dir, 'password-0644');
fs.writeFileSync(open, 'secret\n', { mode: 0o644 });
fs.chmodSync(open, 0o644);
const replay = path.join(EXAMPLES_DIR, 'quarterly-revenue', 'control.json');
fs.writeFileSync(
  path.join(dir, 'endpoints-bad.json'),
  JSON.stringify({ 'Bad Name': { baseUrl: 'http://127.0.0.1:1/v1' } }),
);
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  Reflect.deleteProperty(process.env, 'KAROTTE_REDIS_URL');
  Reflect.deleteProperty(process.env, 'KAROTTE_REDIS_PASSWORD');
});

async function karotte(args: readonly string[]): Promise<{ code: number; err: string; out: string }> {
  let out = '';
  let err = '';
  const code = await main(args, {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
  });
  return { code, err, out };
}

const R = ['--redis', 'redis://127.0.0.1:1'];
const SUBMIT = [
  'submit',
  ...R,
  '--run',
  'r1',
  '--task',
  'quarterly-revenue',
  '--agent',
  'replay',
  '--replay',
  replay,
];

describe('karotte worker, submit and results refuse bad flags with exit 2', () => {
  it.each([
    [['worker', '--tasks', EXAMPLES_DIR], 'missing required flag --redis'],
    [
      ['worker', '--redis', 'redis://:hunter2@127.0.0.1:1', '--tasks', EXAMPLES_DIR],
      'KAROTTE_REDIS_PASSWORD',
    ],
    [['worker', '--redis', 'http://127.0.0.1:1', '--tasks', EXAMPLES_DIR], 'only redis://'],
    [['worker', ...R, '--tasks', EXAMPLES_DIR, '--redis-password-file', open], 'readable by others'],
    [['worker', ...R, '--tasks', path.join(dir, 'none')], '--tasks'],
    [
      ['worker', ...R, '--tasks', EXAMPLES_DIR, '--concurrency', '0'],
      '--concurrency takes an integer from 1',
    ],
    [['worker', ...R, '--tasks', EXAMPLES_DIR, '--lock-ms', '10'], '--lock-ms takes an integer from 1000'],
    [['worker', ...R, '--tasks', EXAMPLES_DIR, '--idle-ms', '1000'], '--idle-ms needs --exit-when-drained'],
    [['worker', ...R, '--tasks', EXAMPLES_DIR, '--queue', 'A:B'], '--queue takes'],
    [['worker', ...R, '--tasks', EXAMPLES_DIR, '--password', 'x'], 'unknown flag --password'],
    [[...SUBMIT, '--agent', 'claude'], '--agent takes replay or openai'],
    [[...SUBMIT, '--agent', 'openai'], '--agent openai needs --endpoint'],
    [[...SUBMIT, '--endpoint', 'e1'], '--endpoint does not go with --agent replay'],
    [[...SUBMIT, '--run', 'Run:1'], '--run takes'],
    [[...SUBMIT, '--n', '0'], '--n takes an integer from 1'],
    [[...SUBMIT, '--task', 'Not A Task'], '--task takes a task id'],
    [['results', ...R, '--run', 'r1', '--timeout-ms', '5'], '--timeout-ms needs --wait'],
    [['results', '--run', 'r1'], 'missing required flag --redis'],
    [
      ['worker', ...R, '--tasks', EXAMPLES_DIR, '--endpoints', path.join(dir, 'endpoints-bad.json')],
      '--endpoints',
    ],
  ])('%j', async (args, message) => {
    const { code, err, out } = await karotte(args);
    expect(code).toBe(2);
    expect(err).toContain(message);
    expect(out).toBe('');
  });

  it('refuses a replay past the 16 KiB payload limit before Redis is asked (exit 2)', async () => {
    const long = path.join(dir, 'long.json');
    fs.writeFileSync(long, JSON.stringify([{ role: 'assistant', content: 'x'.repeat(20_000) }]));
    const { code, err } = await karotte([...SUBMIT, '--replay', long]);
    expect(code).toBe(2);
    expect(err).toMatch(/INVALID_PAYLOAD.*16384/);
  });

  it('takes the password from KAROTTE_REDIS_PASSWORD and removes it from the environment', async () => {
    process.env['KAROTTE_REDIS_PASSWORD'] = 'from-env';
    // A URL with a password is still refused, whatever the environment holds.
    const { code } = await karotte(['worker', '--redis', 'redis://:x@127.0.0.1:1', '--tasks', EXAMPLES_DIR]);
    expect(code).toBe(2);
    expect(process.env['KAROTTE_REDIS_PASSWORD']).toBeUndefined();
  });
});
