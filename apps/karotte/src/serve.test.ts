// `karotte serve`'s refusals: every bad flag is exit 2 naming it, before anything listens.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from './main.js';
import { EXAMPLES_DIR } from './examples.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-serve-unit-'));
const token = path.join(dir, 'token');
fs.writeFileSync(token, 'a-token\n', { mode: 0o600 });
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

async function serve(args: readonly string[]): Promise<{ code: number; err: string; out: string }> {
  let out = '';
  let err = '';
  const code = await main(['serve', ...args], {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
  });
  return { code, err, out };
}

describe('karotte serve refuses bad flags with exit 2', () => {
  it.each([
    [['--listen', '0.0.0.0:8080'], 'loopback only'],
    [['--listen', '10.0.0.1:8080'], 'loopback only'],
    [['--listen', '127.0.0.1'], '--listen must be <host>:<port>'],
    [['--listen', '127.0.0.1:70000'], '--listen must be <host>:<port>'],
    [['--listen', '127.0.0.1:0', '--socket', '/tmp/x.sock'], 'contradict'],
    [['--max-episodes', '0'], '--max-episodes must be an integer'],
    [['--max-episodes', 'lots'], '--max-episodes must be an integer'],
    [['--idle-timeout-ms', '1.5'], '--idle-timeout-ms must be an integer'],
    [['--idle-timeout-ms', '50'], '--idle-timeout-ms must be an integer from 100'],
  ])('%j', async (extra, message) => {
    const { code, err, out } = await serve(['--tasks', EXAMPLES_DIR, '--token-file', token, ...extra]);
    expect(code).toBe(2);
    expect(err).toContain(message);
    expect(out).toBe('');
  });

  it('a missing or empty token file, naming --token-file', async () => {
    const missing = await serve(['--tasks', EXAMPLES_DIR, '--token-file', path.join(dir, 'nope')]);
    expect([missing.code, missing.err.includes('--token-file')]).toEqual([2, true]);
    const empty = path.join(dir, 'empty');
    fs.writeFileSync(empty, '\n');
    const blank = await serve(['--tasks', EXAMPLES_DIR, '--token-file', empty]);
    expect([blank.code, blank.err.includes('one non-empty line')]).toEqual([2, true]);
  });

  it('a tasks directory that holds no task, or that does not exist', async () => {
    const none = await serve(['--tasks', dir, '--token-file', token]);
    expect([none.code, none.err]).toEqual([2, expect.stringContaining('holds no task directory')]);
    const absent = await serve(['--tasks', path.join(dir, 'absent'), '--token-file', token]);
    expect(absent.code).toBe(2);
  });

  it('needs --tasks and --token-file', async () => {
    expect((await serve(['--token-file', token])).err).toContain('missing required flag --tasks');
    expect((await serve(['--tasks', EXAMPLES_DIR])).err).toContain('missing required flag --token-file');
  });
});
