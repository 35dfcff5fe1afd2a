// Every refusal of the model flags of run, eval and redteam --attacker: exit 2, stderr naming the
// flag, and nothing run (no output directory made). All of it happens before a sandbox exists,
// so these run without root.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from './main.js';

const examples = path.resolve(import.meta.dirname, '../examples');
const task = path.join(examples, 'quarterly-revenue');
const made: string[] = [];
const KEY_ENV = 'KAROTTE_FLAGS_TEST_KEY';

afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  Reflect.deleteProperty(process.env, KEY_ENV);
});

function tmp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-flags-'));
  made.push(dir);
  return dir;
}

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
  });
  return { code, out, err };
}

/** The first line of stderr (the refusal; the command's help follows it). */
function refusal(err: string): string {
  return err.split('\n')[0] ?? '';
}

const model = ['--model', 'm', '--base-url', 'http://127.0.0.1:9/v1'];

describe('karotte run: the model flags', () => {
  const runWith = async (extra: string[]) => {
    const out = path.join(tmp(), 'out');
    const result = await cli(['run', '--task', task, ...extra, '--out', out]);
    // Nothing was run: not even the output directory exists.
    expect(fs.existsSync(out)).toBe(false);
    return result;
  };

  it.each([
    ['--model', ['--agent', 'openai', '--base-url', 'http://127.0.0.1:9/v1']],
    ['--base-url', ['--agent', 'openai', '--model', 'm']],
    ['--model', ['--agent', 'openai', '--model', '', '--base-url', 'http://127.0.0.1:9/v1']],
    ['--base-url', ['--agent', 'openai', '--model', 'm', '--base-url', 'ftp://127.0.0.1/v1']],
    ['--base-url', ['--agent', 'openai', '--model', 'm', '--base-url', 'not a url']],
    ['--replay', ['--agent', 'openai', ...model, '--replay', path.join(task, 'control.json')]],
    ['--model', ['--agent', 'replay', '--replay', path.join(task, 'control.json'), '--model', 'm']],
    [
      '--api-key-env',
      ['--agent', 'replay', '--replay', path.join(task, 'control.json'), '--api-key-env', 'X'],
    ],
    ['--agent', ['--agent', 'anthropic', ...model]],
    ['--tools', ['--agent', 'openai', ...model, '--tools', 'swe-agent']],
    ['--tools', ['--agent', 'replay', '--replay', path.join(task, 'control.json'), '--tools', 'nope']],
    ['--max-turns', ['--agent', 'openai', ...model, '--max-turns', '0']],
    ['--max-turns', ['--agent', 'openai', ...model, '--max-turns', 'ten']],
    [
      '--max-turns',
      ['--agent', 'replay', '--replay', path.join(task, 'control.json'), '--max-turns', '100001'],
    ],
    ['--api-key-env', ['--agent', 'openai', ...model, '--api-key-env', 'KAROTTE_NO_SUCH_VARIABLE']],
    ['--api-key-env', ['--agent', 'openai', ...model, '--api-key-env', 'NOT-A-NAME']],
    ['--api-key-file', ['--agent', 'openai', ...model, '--api-key-file', '/nonexistent/karotte-key']],
  ])('refuses with exit 2 naming %s: %j', async (flag, extra) => {
    const r = await runWith(extra);
    expect(r.code).toBe(2);
    expect(refusal(r.err)).toContain(flag);
    expect(r.out).toBe('');
  });

  it('an unset default key variable is refused naming --api-key-env and OPENAI_API_KEY', async () => {
    const saved = process.env['OPENAI_API_KEY'];
    Reflect.deleteProperty(process.env, 'OPENAI_API_KEY');
    try {
      const r = await runWith(['--agent', 'openai', ...model]);
      expect(r.code).toBe(2);
      expect(refusal(r.err)).toContain('--api-key-env');
      expect(refusal(r.err)).toContain('OPENAI_API_KEY');
    } finally {
      if (saved !== undefined) process.env['OPENAI_API_KEY'] = saved;
    }
  });

  it('a key variable that is set but empty, or not one printable token, is refused without quoting it', async () => {
    process.env[KEY_ENV] = '   ';
    const empty = await runWith(['--agent', 'openai', ...model, '--api-key-env', KEY_ENV]);
    expect(empty.code).toBe(2);
    expect(refusal(empty.err)).toContain('--api-key-env');
    process.env[KEY_ENV] = 'sk-two words-secret';
    const spaced = await runWith(['--agent', 'openai', ...model, '--api-key-env', KEY_ENV]);
    expect(spaced.code).toBe(2);
    expect(refusal(spaced.err)).toContain('--api-key-env');
    expect(spaced.err).not.toContain('secret');
  });

  it('an API key file that others can read is refused naming --api-key-file, and so are both key flags', async () => {
    const file = path.join(tmp(), 'key');
    fs.writeFileSync(file, 'sk-karotte-readable\n', { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    const open = await runWith(['--agent', 'openai', ...model, '--api-key-file', file]);
    expect(open.code).toBe(2);
    expect(refusal(open.err)).toContain('--api-key-file');
    expect(open.err).not.toContain('sk-karotte-readable');
    fs.chmodSync(file, 0o600);
    const both = await runWith([
      '--agent',
      'openai',
      ...model,
      '--api-key-file',
      file,
      '--api-key-env',
      KEY_ENV,
    ]);
    expect(both.code).toBe(2);
    expect(refusal(both.err)).toContain('--api-key-env and --api-key-file');
  });

  it('an --agent-config that sets a flag-owned option, a bad field or is no JSON object is refused naming it', async () => {
    process.env[KEY_ENV] = 'sk-karotte-config';
    const dir = tmp();
    const write = (name: string, text: string): string => {
      fs.writeFileSync(path.join(dir, name), text);
      return path.join(dir, name);
    };
    const cases: [string, string][] = [
      [write('model.json', '{"model": "other"}'), 'model is given by --model'],
      [write('temperature.json', '{"sampling": {"temperature": 9}}'), 'field sampling.temperature'],
      [write('unknown.json', '{"temprature": 0.5}'), '--agent-config'],
      [write('array.json', '[1, 2]'), '--agent-config'],
      [write('broken.json', '{"sampling": '), '--agent-config'],
      [write('reserved.json', '{"extraBody": {"messages": []}}'), 'field extraBody.messages'],
    ];
    for (const [file, expected] of cases) {
      const r = await runWith([
        '--agent',
        'openai',
        ...model,
        '--api-key-env',
        KEY_ENV,
        '--agent-config',
        file,
      ]);
      expect(r.code, file).toBe(2);
      expect(refusal(r.err), file).toContain(expected);
    }
  });
});

/** A tasks directory holding links to the two examples. */
function suite(): string {
  const dir = tmp();
  for (const name of ['quarterly-revenue', 'roman-numerals'])
    fs.symlinkSync(path.join(examples, name), path.join(dir, name));
  return dir;
}

describe('karotte eval: its flags and tasks', () => {
  const evalWith = async (extra: string[], tasks = suite()) => {
    const out = path.join(tmp(), 'out');
    const result = await cli(['eval', '--tasks', tasks, ...extra, '--out', out]);
    expect(fs.existsSync(out)).toBe(false);
    return result;
  };

  it.each([
    ['--n', ['--agent', 'openai', ...model, '--n', '0']],
    ['--n', ['--agent', 'openai', ...model, '--n', '1001']],
    ['--n', ['--agent', 'openai', ...model, '--n', '2.5']],
    ['--concurrency', ['--agent', 'openai', ...model, '--concurrency', '0']],
    ['--concurrency', ['--agent', 'openai', ...model, '--concurrency', '65']],
    ['--model', ['--agent', 'openai', '--base-url', 'http://127.0.0.1:9/v1']],
    ['--base-url', ['--agent', 'openai', '--model', 'm']],
    ['--agent', ['--model', 'm']],
    ['--tools', ['--agent', 'openai', ...model, '--tools', 'vim']],
    ['--api-key-env', ['--agent', 'openai', ...model, '--api-key-env', 'KAROTTE_NO_SUCH_VARIABLE']],
    ['--replay', ['--agent', 'replay']],
    ['--progress and --quiet', ['--agent', 'openai', ...model, '--progress', '--quiet']],
  ])('refuses with exit 2 naming %s: %j', async (flag, extra) => {
    const r = await evalWith(extra);
    expect(r.code).toBe(2);
    expect(refusal(r.err)).toContain(flag);
  });

  it('refuses a --tasks that holds no task, one that does not exist, and an invalid task in it (the field named)', async () => {
    const empty = tmp();
    const none = await evalWith(['--agent', 'openai', ...model], empty);
    expect(none.code).toBe(2);
    expect(refusal(none.err)).toContain('--tasks');
    const missing = await evalWith(['--agent', 'openai', ...model], path.join(empty, 'nope'));
    expect(missing.code).toBe(2);
    const dir = tmp();
    fs.cpSync(task, path.join(dir, 'good'), { recursive: true });
    fs.cpSync(task, path.join(dir, 'bad'), { recursive: true });
    const taskFile = path.join(dir, 'bad', 'task.json');
    const parsed = JSON.parse(fs.readFileSync(taskFile, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(taskFile, JSON.stringify({ ...parsed, id: 'bad', limits: { pids: -3 } }));
    const invalid = await evalWith(['--agent', 'openai', ...model], dir);
    expect(invalid.code).toBe(2);
    expect(invalid.err).toContain(path.join(dir, 'bad'));
    expect(invalid.err).toContain('limits.pids');
    // Two tasks with one id: the second is refused, naming the id.
    fs.writeFileSync(taskFile, JSON.stringify(parsed));
    const twice = await evalWith(['--agent', 'openai', ...model], dir);
    expect(twice.code).toBe(2);
    expect(twice.err).toContain('(field id) the id quarterly-revenue is also the id of');
  });

  it('refuses an --out that holds an eval of another model, naming --model', async () => {
    const out = tmp();
    fs.writeFileSync(
      path.join(out, 'eval.json'),
      JSON.stringify({
        version: 1,
        settings: {
          agent: 'openai',
          model: 'other',
          baseUrl: 'http://x/v1',
          tools: 'bash',
          maxTurns: null,
          replay: null,
        },
      }),
    );
    process.env[KEY_ENV] = 'sk-karotte-eval';
    const r = await cli([
      'eval',
      '--tasks',
      examples,
      '--agent',
      'openai',
      ...model,
      '--api-key-env',
      KEY_ENV,
      '--out',
      out,
    ]);
    expect(r.code).toBe(2);
    expect(refusal(r.err)).toContain('--model');
    expect(refusal(r.err)).toContain('"other"');
    expect(fs.readdirSync(out)).toEqual(['eval.json']);
  });
});

describe('karotte redteam --attacker: its flags', () => {
  it.each([
    ['--attacker', ['--attacker', 'replay', ...model]],
    ['--attacker', ['--attacker', 'claude', ...model]],
    ['--model', ['--attacker', 'openai', '--base-url', 'http://127.0.0.1:9/v1']],
    ['--base-url', ['--attacker', 'openai', '--model', 'm']],
    ['--only', ['--attacker', 'openai', ...model, '--only', 'fifo']],
    ['--episodes', ['--attacker', 'openai', ...model, '--episodes', '0']],
    ['--tools', ['--attacker', 'openai', ...model, '--tools', 'x']],
    ['--max-turns', ['--attacker', 'openai', ...model, '--max-turns', '-1']],
    ['--api-key-env', ['--attacker', 'openai', ...model, '--api-key-env', 'KAROTTE_NO_SUCH_VARIABLE']],
    // The catalog takes none of the attacker's flags.
    ['--model', ['--model', 'm']],
    ['--episodes', ['--episodes', '3']],
    ['--tools', ['--tools', 'bash']],
  ])('refuses with exit 2 naming %s: %j', async (flag, extra) => {
    const out = path.join(tmp(), 'out');
    const r = await cli(['redteam', '--task', task, ...extra, '--out', out]);
    expect(r.code).toBe(2);
    expect(refusal(r.err)).toContain(flag);
    expect(fs.existsSync(out)).toBe(false);
  });
});
