// The Python client's own tests (clients/python, unittest, standard library only) against a live
// `karotte serve`, with Debian's /usr/bin/python3: both examples solved, a wrong answer, a group
// of 8 with equal fingerprints, every attack of the catalog's answer-key-theft and network
// classes replayed through the protocol scoring 0, exactly-once turns, the event stream, run
// mode, and retries at capacity.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { attackReplay } from '../src/redteam/replay.js';
import { examples, protocolAttacks, startServe, writeSmallRomanTask } from './serve-support.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI)
  console.log('[karotte] Python client integration test skipped: it needs root (real sandboxes)');

const clientDir = path.resolve(import.meta.dirname, '..', '..', '..', 'clients', 'python');

describe.skipIf(!isRoot && !inCI)('the Python client against karotte serve', () => {
  it('passes its unittest suite against a live server, nothing skipped', { timeout: 600_000 }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-serve-python-'));
    const tasks = path.join(dir, 'tasks');
    fs.mkdirSync(tasks);
    for (const name of ['quarterly-revenue', 'roman-numerals'])
      fs.symlinkSync(path.join(examples, name), path.join(tasks, name));
    const small = writeSmallRomanTask(tasks);
    // The attacks as the Python tests replay them: each one's assistant messages.
    const attacksFile = path.join(dir, 'attacks.json');
    const attacks = protocolAttacks().map((attack) => ({
      id: attack.id,
      messages: attackReplay(attack, 'answer.txt'),
    }));
    fs.writeFileSync(attacksFile, JSON.stringify(attacks));
    const served = await startServe(['--max-episodes', '8'], {
      tasks,
      env: { KAROTTE_TEST_KEY: 'scripted-key' },
    });
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
          KAROTTE_MAX_EPISODES: '8',
          KAROTTE_TASK_IDS: ['quarterly-revenue', 'roman-numerals', small].join(','),
          KAROTTE_SMALL_TASK: small,
          KAROTTE_GROUP_SIZE: '8',
          KAROTTE_ATTACKS: attacksFile,
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
      expect(output).toMatch(/Ran 13 tests/);
      expect(attacks.length).toBeGreaterThanOrEqual(10);
    } finally {
      expect(await served.stop()).toBe(0);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
