// `karotte view`'s refusals (exit 2 naming the problem, before anything listens) and its export,
// through the app's entry point: no root, no browser (the browser tests are in test/).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from './main.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-view-unit-'));
const run = path.join(dir, 'runs', 'one');
fs.mkdirSync(run, { recursive: true });
fs.writeFileSync(
  path.join(run, 'result.json'),
  JSON.stringify({ taskId: 'quarterly-revenue', status: 'failed', score: 0, misbehavior: [] }),
);
fs.writeFileSync(
  path.join(run, 'transcript.jsonl'),
  '{"type":"episode_started","taskId":"quarterly-revenue"}\n',
);
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

async function view(args: readonly string[]): Promise<{ code: number; err: string; out: string }> {
  let out = '';
  let err = '';
  const code = await main(['view', ...args], {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
  });
  return { code, err, out };
}

describe('karotte view', () => {
  it.each([
    [[dir, '--listen', '0.0.0.0:8080'], 'loopback only'],
    [[dir, '--listen', '10.0.0.1:8080'], 'loopback only'],
    [[dir, '--listen', '[::]:8080'], 'loopback only'],
    [[dir, '--listen', 'example.com:80'], 'loopback only'],
    [[dir, '--listen', '127.0.0.1'], '--listen must be <host>:<port>'],
    [[dir, '--listen', '127.0.0.1:70000'], '--listen must be <host>:<port>'],
    [[dir, '--listen', '127.0.0.1:0', '--export', path.join(dir, 'x.html')], 'contradict'],
    [[], 'give at least one run directory'],
    [[dir, '--bogus'], 'unknown flag --bogus'],
    [[path.join(dir, 'missing')], 'is not a directory that can be read'],
    [[path.join(run, 'result.json')], 'is not a directory'],
    [[dir, '--export', path.join(dir, 'no-such-dir', 'x.html')], '--export'],
  ])('refuses %j with exit 2', async (args, message) => {
    const { code, err, out } = await view(args);
    expect(code).toBe(2);
    expect(err).toContain(message);
    expect(out).not.toContain('listening on');
  });

  it('exports one file of the runs, mode 0600', async () => {
    const file = path.join(dir, 'view.html');
    const { code, out, err } = await view([dir, '--export', file]);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toBe(`wrote ${file}: 1 run\n`);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const html = fs.readFileSync(file, 'utf8');
    expect(html).toContain('<meta http-equiv="Content-Security-Policy"');
    expect(html).toContain('"name":"runs/one"');
  });
});
