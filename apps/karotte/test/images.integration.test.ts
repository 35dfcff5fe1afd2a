// Task environments end to end through the built CLI: tasks whose student (and grader) run in
// a Debian image built here (test/support/images.ts), and the refusals of section 10: a
// missing or non-image environment.image and a digest that does not match the pin
// are exit 2 from validate and run, naming the field, before anything runs.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidsOfUid } from '../../../test/support/index.js';
import { testImage, testImageUnavailable } from '../../../test/support/images.js';

const app = path.resolve(import.meta.dirname, '..');
const cli = path.join(app, 'dist', 'cli.js');
const example = path.join(app, 'examples', 'images', 'fast-correlation');
const inCI = process.env['CI'] === 'true' || process.env['CI'] === '1';
const unavailable = testImageUnavailable();
if (unavailable !== undefined && !inCI)
  process.stderr.write(`[karotte] image CLI tests skipped: ${unavailable}\n`);

let base = '';
let cacheDir = '';
let pythonImage = '';

beforeAll(async () => {
  if (unavailable !== undefined && !inCI) return;
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-cli-images-'));
  cacheDir = path.join(base, 'cache');
  pythonImage = await testImage('python');
  // The example names this one by its absolute path in the machine's test-image cache.
  await testImage('numpy');
}, 900_000);

afterAll(() => {
  if (base !== '') fs.rmSync(base, { recursive: true, force: true });
});

function karotte(args: readonly string[], timeoutMs = 300_000) {
  const child = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, KAROTTE_IMAGE_CACHE_DIR: cacheDir },
  });
  return { status: child.status, stdout: child.stdout, stderr: child.stderr };
}

function resultOf(out: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(path.join(out, 'result.json'), 'utf8')) as Record<string, unknown>;
}

/** A task scaffolded by `karotte init`, its task.json changed by `edit`. */
function initTask(
  name: string,
  grader: 'js' | 'python',
  edit: (task: Record<string, unknown>) => void,
): string {
  const dir = path.join(base, name);
  expect(karotte(['init', dir, '--grader', grader]).status).toBe(0);
  const file = path.join(dir, 'task.json');
  const task = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  edit(task);
  fs.writeFileSync(file, JSON.stringify(task, null, 2));
  return dir;
}

describe.skipIf(unavailable !== undefined && !inCI)('tasks in their own image', () => {
  it('a scaffolded Python task in a Debian image: validate, then the control passes, the grader in the image too', () => {
    const dir = initTask('python-in-image', 'python', (task) => {
      task['environment'] = { image: pythonImage };
    });
    const validated = karotte(['validate', '--task', dir, '--json']);
    expect(validated.status, validated.stderr).toBe(0);
    // Imported into the test's cache by validate (as root), once.
    const listed = karotte(['image', 'ls', '--json']);
    expect(
      (JSON.parse(listed.stdout) as { images: { source: string }[] }).images.map((i) => i.source),
    ).toContain(pythonImage);
    const out = path.join(base, 'out-python');
    const run = karotte([
      'run',
      '--task',
      dir,
      '--agent',
      'replay',
      '--replay',
      path.join(dir, 'control.json'),
      '--out',
      out,
    ]);
    expect(run.status, run.stderr).toBe(0);
    const result = resultOf(out);
    expect(result).toMatchObject({ status: 'passed', score: 1, misbehavior: [] });
    expect(pidsOfUid((result['sandbox'] as { uid: number }).uid)).toEqual([]);
    // The student really was in the image: the host's /work (this checkout) is not there.
    const probe = path.join(base, 'probe.json');
    fs.writeFileSync(
      probe,
      JSON.stringify([
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'c0',
              type: 'function',
              function: {
                name: 'bash',
                arguments: JSON.stringify({ command: 'ls -d /work 2>&1; echo 42 > answer.txt' }),
              },
            },
          ],
        },
        { role: 'assistant', content: 'done' },
      ]),
    );
    const probeOut = path.join(base, 'out-probe');
    expect(
      karotte(['run', '--task', dir, '--agent', 'replay', '--replay', probe, '--out', probeOut]).status,
    ).toBe(0);
    expect(fs.readFileSync(path.join(probeOut, 'transcript.jsonl'), 'utf8')).toContain(
      "cannot access '/work'",
    );
  });

  it('grader.environment: a student on the host view, its Python grader in an image of its own', () => {
    const dir = initTask('grader-image', 'python', (task) => {
      (task['grader'] as Record<string, unknown>)['environment'] = { image: pythonImage };
    });
    // The grader scores 1 only where it runs in the image: no host /work, its cwd /karotte/task.
    const grade = path.join(dir, 'grade.py');
    fs.writeFileSync(
      grade,
      fs
        .readFileSync(grade, 'utf8')
        .replace(
          'score = 1 if answer is not None and answer == expected else 0',
          'score = 1 if answer == expected and not os.path.exists("/work") and os.getcwd() == "/karotte/task" else 0',
        ),
    );
    const out = path.join(base, 'out-grader-image');
    const run = karotte([
      'run',
      '--task',
      dir,
      '--agent',
      'replay',
      '--replay',
      path.join(dir, 'control.json'),
      '--out',
      out,
    ]);
    expect(run.status, run.stderr).toBe(0);
    expect(resultOf(out)).toMatchObject({ status: 'passed', score: 1 });
    const misplaced = initTask('grader-image-on-script', 'js', (task) => {
      (task['grader'] as Record<string, unknown>)['environment'] = { image: pythonImage };
    });
    const refused = karotte(['validate', '--task', misplaced]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('(field grader.environment)');
  });

  it('the fast-correlation example: its control passes in its numpy image, its attacks score 0', () => {
    const out = path.join(base, 'out-example');
    const run = karotte([
      'run',
      '--task',
      example,
      '--agent',
      'replay',
      '--replay',
      path.join(example, 'control.json'),
      '--out',
      out,
    ]);
    expect(run.status, run.stderr).toBe(0);
    expect(resultOf(out)).toMatchObject({ status: 'passed', score: 1 });
    for (const name of fs.readdirSync(path.join(example, 'attacks'))) {
      const attack = JSON.parse(fs.readFileSync(path.join(example, 'attacks', name), 'utf8')) as {
        replay: unknown;
      };
      const replay = path.join(base, `attack-${name}`);
      fs.writeFileSync(replay, JSON.stringify(attack.replay));
      const attackOut = path.join(base, `out-${name}`);
      const attacked = karotte([
        'run',
        '--task',
        example,
        '--agent',
        'replay',
        '--replay',
        replay,
        '--out',
        attackOut,
      ]);
      expect(attacked.status, `${name}: ${attacked.stderr}`).toBe(0);
      expect(resultOf(attackOut), name).toMatchObject({ status: 'failed', score: 0 });
    }
  }, 600_000);

  it('the red-team catalog holds inside an image: a Python task, student and grader in the Debian image', () => {
    const dir = initTask('redteam-in-image', 'python', (task) => {
      task['environment'] = { image: pythonImage };
    });
    const redteam = karotte(['redteam', '--task', dir, '--json'], 1_500_000);
    expect(redteam.status, redteam.stdout.slice(-4000)).toBe(0);
    expect(redteam.stdout).toContain('redteam-in-image-read-the-key');
  }, 1_800_000);

  it('a missing or non-image environment.image, and a wrong pin, are exit 2 naming the field', () => {
    const notImage = path.join(base, 'not-an-image.tar');
    fs.writeFileSync(notImage, 'hello\n'.repeat(200));
    const notLayout = path.join(base, 'not-a-layout');
    fs.mkdirSync(notLayout);
    const cases: [string, Record<string, unknown>, string, RegExp][] = [
      [
        'missing',
        { image: path.join(base, 'karotte-no-such-image') },
        'environment.image',
        /does not exist/u,
      ],
      ['not an image', { image: notImage }, 'environment.image', /not an image archive/u],
      [
        'a directory that is not a layout',
        { image: notLayout },
        'environment.image',
        /not an OCI image layout/u,
      ],
      [
        'a wrong pin',
        { image: pythonImage, digest: `sha256:${'0'.repeat(64)}` },
        'environment.digest',
        /not the pinned sha256:0{64}/u,
      ],
    ];
    for (const [label, environment, field, message] of cases) {
      const dir = initTask(`bad-${label.replaceAll(' ', '-')}`, 'js', (task) => {
        task['environment'] = environment;
      });
      const validated = karotte(['validate', '--task', dir]);
      expect(validated.status, label).toBe(2);
      expect(validated.stderr, label).toContain(`(field ${field})`);
      expect(validated.stderr, label).toMatch(message);
      const out = path.join(base, `out-bad-${label.replaceAll(' ', '-')}`);
      const run = karotte([
        'run',
        '--task',
        dir,
        '--agent',
        'replay',
        '--replay',
        path.join(dir, 'control.json'),
        '--out',
        out,
      ]);
      expect(run.status, label).toBe(2);
      expect(run.stderr, label).toContain(`(field ${field})`);
      expect(fs.existsSync(path.join(out, 'result.json')), label).toBe(false);
    }
  });

  it('karotte image import, ls and prune', () => {
    const imported = karotte(['image', 'import', pythonImage]);
    expect(imported.status, imported.stderr).toBe(0);
    const digest = imported.stdout.split('\n')[0]!;
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/u);
    expect(karotte(['image', 'ls']).stdout).toContain(digest);
    expect(karotte(['image', 'import', pythonImage, '--digest', `sha256:${'1'.repeat(64)}`]).status).toBe(2);
    expect(karotte(['image', 'import', path.join(base, 'karotte-nothing')]).status).toBe(2);
    const pruned = karotte(['image', 'prune', digest]);
    expect(pruned.stdout).toContain(digest);
    expect(karotte(['image', 'ls']).stdout).not.toContain(digest);
  });
});
