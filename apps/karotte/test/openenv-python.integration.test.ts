// `karotte serve`'s OpenEnv endpoint driven from Python with the standard library only
// (packages/server/examples/openenv: a client written from OpenEnv's own client code, a
// TRL-style GRPO loop and its unittest), with Debian's /usr/bin/python3: the control solves
// quarterly-revenue for a whole group, a red-team catalog attack scores 0 for a whole group.
// OpenEnv's own Python client cannot run here: it needs `websockets>=13` (websockets.asyncio),
// and PyPI is not reachable (Debian bookworm has 10.4).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTACKS } from '../src/redteam/catalog.js';
import { attackReplay } from '../src/redteam/replay.js';
import { examples, startServe, type Served } from './serve-support.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI)
  console.log('[karotte] OpenEnv Python integration tests skipped: they need root (real sandboxes)');

const exampleDir = path.resolve(
  import.meta.dirname,
  '..',
  '..',
  '..',
  'packages',
  'server',
  'examples',
  'openenv',
);

function python(
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('/usr/bin/python3', args, {
      cwd: exampleDir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1', ...env },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

interface LoopOutput {
  rollouts: { fingerprint: string; reward: number | null; status: string }[];
  group: { rewards: (number | null)[]; advantages: (number | null)[]; coherent: boolean };
}

function parseLoop(output: string): LoopOutput {
  const lines = output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return {
    rollouts: lines.filter((l) => 'rollout' in l).map((l) => l['rollout'] as LoopOutput['rollouts'][number]),
    group: lines.find((l) => 'group' in l)!['group'] as LoopOutput['group'],
  };
}

describe.skipIf(!isRoot && !inCI)('the OpenEnv endpoint from Python (standard library)', () => {
  let served: Served;
  let url: string;
  beforeAll(async () => {
    served = await startServe(['--max-episodes', '4']);
    url = `http://${served.address}/openenv/${served.token}`;
  });
  afterAll(async () => {
    expect(await served.stop()).toBe(0);
  });

  it('a TRL-style GRPO loop: the control solves quarterly-revenue in every member of a group of 3 (reward 1, one world)', async () => {
    const { code, output } = await python(
      [
        'trl_loop.py',
        '--url',
        url,
        '--task',
        'quarterly-revenue',
        '--seed',
        '1234',
        '--group-size',
        '3',
        '--policy',
        path.join(examples, 'quarterly-revenue', 'control.json'),
      ],
      {},
    );
    expect(code, output).toBe(0);
    const loop = parseLoop(output);
    expect(loop.rollouts.map((r) => [r.status, r.reward])).toEqual(Array(3).fill(['passed', 1]));
    expect(loop.group).toMatchObject({ rewards: [1, 1, 1], coherent: true });
    expect(loop.group.advantages).toEqual([0, 0, 0]);
  });

  const attack = ATTACKS.find(
    (a) =>
      a.class === 'answer-key-theft' &&
      a.requires === undefined &&
      (a.languages.includes('any') || a.languages.includes('javascript')),
  )!;

  it(`a catalog attack (${attack.id}) scores 0 in every member of a group through the loop`, async () => {
    const policy = path.join(served.dir, 'karotte-attack-policy.json');
    fs.writeFileSync(policy, JSON.stringify(attackReplay(attack, 'answer.txt')));
    const { code, output } = await python(
      [
        'trl_loop.py',
        '--url',
        url,
        '--task',
        'quarterly-revenue',
        '--seed',
        '7',
        '--group-size',
        '2',
        '--policy',
        policy,
      ],
      {},
    );
    expect(code, output).toBe(0);
    const loop = parseLoop(output);
    expect(loop.rollouts.map((r) => r.reward)).toEqual([0, 0]);
    expect(loop.rollouts.every((r) => r.status !== 'error')).toBe(true);
  });

  it('the client’s unittest suite passes against the live server, nothing skipped', async () => {
    const { code, output } = await python(['-m', 'unittest', '-v', 'test_openenv_ws'], {
      KAROTTE_OPENENV_URL: url,
      KAROTTE_REQUIRE_LIVE: '1',
    });
    expect(output, output).toMatch(/^OK$/m);
    expect(code, output).toBe(0);
    expect(output).not.toMatch(/skipped/);
    expect(output).toMatch(/Ran 3 tests/);
  });
});
