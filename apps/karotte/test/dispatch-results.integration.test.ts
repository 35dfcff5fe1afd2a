// `karotte submit` and `karotte results` against a real redis-server (started here on loopback,
// stopped after), without a worker: what results prints for episodes that have no result yet,
// the progress of --wait on a terminal (and none on a pipe), and --timeout-ms.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/main.js';
import { EXAMPLES_DIR } from '../src/examples.js';

const haveRedis = fs.existsSync('/usr/bin/redis-server');
if (!haveRedis && process.env['CI'] !== 'true')
  console.log('[karotte] dispatch results tests skipped: no /usr/bin/redis-server');

async function run(
  args: readonly string[],
  tty = false,
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s), isTTY: tty },
  });
  return { code, out, err };
}

// Under CI=true these tests must run: a CI machine without what they need is a broken one.
if (!haveRedis && process.env['CI'] === 'true')
  throw new Error(
    'the dispatch tests need root, redis-server, nsenter, ip and the built CLI: CI=true forbids skipping them',
  );

describe.skipIf(!haveRedis)('karotte submit and results (real Redis, no worker)', { timeout: 60_000 }, () => {
  let dir: string;
  let redis: ChildProcess;
  let url: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-dispatch-results-'));
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => {
          resolve(p);
        });
      });
    });
    redis = spawn(
      '/usr/bin/redis-server',
      ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
      {
        stdio: 'ignore',
      },
    );
    url = `redis://127.0.0.1:${port}`;
    const deadline = Date.now() + 10_000;
    while (
      !(await new Promise<boolean>((resolve) => {
        const c = net.connect(port, '127.0.0.1', () => {
          c.end();
          resolve(true);
        });
        c.once('error', () => {
          resolve(false);
        });
      }))
    ) {
      if (Date.now() > deadline) throw new Error('redis-server did not listen');
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  afterAll(async () => {
    if (redis.exitCode === null) {
      const exited = new Promise((r) => redis.once('exit', r));
      redis.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('submit prints the episode ids (the same again adds nothing); results lists them without a result', async () => {
    const replay = path.join(EXAMPLES_DIR, 'quarterly-revenue', 'control.json');
    const args = [
      'submit',
      '--redis',
      url,
      '--run',
      'pending',
      '--task',
      path.join(EXAMPLES_DIR, 'quarterly-revenue'),
      '--agent',
      'replay',
      '--replay',
      replay,
      '--n',
      '2',
    ];
    const first = await run(args);
    expect(first).toMatchObject({ code: 0, err: '' });
    expect(first.out).toBe('pending-quarterly-revenue-0\npending-quarterly-revenue-1\n');
    expect((await run([...args, '--json'])).out).toBe(
      '["pending-quarterly-revenue-0","pending-quarterly-revenue-1"]\n',
    );
    const listed = await run(['results', '--redis', url, '--run', 'pending']);
    expect(listed.code).toBe(0);
    expect(listed.out).toBe(
      'pending-quarterly-revenue-0: waiting\npending-quarterly-revenue-1: waiting\n0 of 2 episodes have a result\n',
    );
    const json = await run(['results', '--redis', url, '--run', 'pending', '--json']);
    expect(JSON.parse(json.out)).toEqual([
      { episodeId: 'pending-quarterly-revenue-0', result: null },
      { episodeId: 'pending-quarterly-revenue-1', result: null },
    ]);
  });

  it('--wait shows progress on a terminal only, and --timeout-ms ends it with exit 1', async () => {
    const tty = await run(
      ['results', '--redis', url, '--run', 'pending', '--wait', '--timeout-ms', '1500'],
      true,
    );
    expect(tty.code).toBe(1);
    expect(tty.err).toContain('0/2 have a result (0 running, 2 waiting): 0 passed, 0 failed, 0 error');
    expect(tty.err).toContain('timed out after 1500 ms');
    const pipe = await run(['results', '--redis', url, '--run', 'pending', '--wait', '--timeout-ms', '1000']);
    expect(pipe.code).toBe(1);
    expect(pipe.err).not.toContain('have a result');
  });

  it('a run nobody submitted has no episodes; an unreachable Redis is exit 1', async () => {
    expect((await run(['results', '--redis', url, '--run', 'nobody', '--json'])).out).toBe('[]\n');
    const down = await run(['results', '--redis', 'redis://127.0.0.1:1', '--run', 'nobody']);
    expect(down.code).toBe(1);
    expect(down.err).toContain('REDIS_UNAVAILABLE');
  });
});
