// The Python client's own tests (clients/python, unittest, standard library only) against a live
// `karotte serve`, with Debian's /usr/bin/python3: both examples solved, a wrong answer, a group,
// exactly-once turns, the event stream, run mode, and retries at capacity.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { examples, startServe } from './serve-support.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI)
  console.log('[karotte] Python client integration test skipped: it needs root (real sandboxes)');

const clientDir = path.resolve(import.meta.dirname, '..', '..', '..', 'clients', 'python');

describe.skipIf(!isRoot && !inCI)('the Python client against karotte serve', () => {
  it('passes its unittest suite against a live server, nothing skipped', { timeout: 600_000 }, async () => {
    const served = await startServe(['--max-episodes', '2'], { env: { KAROTTE_TEST_KEY: 'scripted-key' } });
    try {
      const child = spawn('/usr/bin/python3', ['-m', 'unittest', '-v', 'tests.test_client'], {
        cwd: clientDir,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          PATH: '/usr/bin:/bin',
          PYTHONPATH: path.join(clientDir, 'src'),
          PYTHONDONTWRITEBYTECODE: '1',
          KAROTTE_URL: `http://${served.address}`,
          KAROTTE_TOKEN: served.token,
          KAROTTE_EXAMPLES: examples,
          KAROTTE_MAX_EPISODES: '2',
          KAROTTE_REQUIRE_LIVE: '1',
        },
      });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
      const timer = setTimeout(() => child.kill('SIGKILL'), 540_000);
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      clearTimeout(timer);
      expect(output, output).toMatch(/^OK$/m);
      expect(code, output).toBe(0);
      expect(output).not.toMatch(/skipped/);
      expect(output).toMatch(/Ran 12 tests/);
    } finally {
      expect(await served.stop()).toBe(0);
    }
  });
});
