import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildStudentEnv, isSafePathEntry, sanitizeEnvironment } from './env.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('isSafePathEntry', () => {
  it('accepts root-owned system directories and rejects empty, relative and world-writable ones', () => {
    expect(isSafePathEntry('/usr/bin')).toBe(true);
    expect(isSafePathEntry('')).toBe(false);
    expect(isSafePathEntry('bin')).toBe(false);
    expect(isSafePathEntry('/tmp')).toBe(false);
    expect(isSafePathEntry('/nonexistent-karotte')).toBe(false);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-env-'));
    made.push(dir);
    expect(isSafePathEntry(dir)).toBe(false);
  });
});

describe('sanitizeEnvironment', () => {
  it('drops code-running variables and unsafe loader entries, with reasons', () => {
    const { env, removed } = sanitizeEnvironment({
      PATH: '/usr/bin::/tmp:bin:/bin',
      LD_PRELOAD: '/tmp/evil.so /usr/lib/x',
      LD_LIBRARY_PATH: '/tmp',
      BASH_ENV: '/tmp/x',
      NODE_OPTIONS: '--require /tmp/x.js',
      PYTHONPATH: '/tmp/lib',
      'BAD-NAME': 'x',
      BASH_FUNC_ls__: '() { :; }',
      OK: 'fine',
    });
    expect(env).toEqual({ PATH: '/usr/bin:/bin', OK: 'fine' });
    expect(removed.map((entry) => entry.name).sort()).toEqual(
      [
        'BAD-NAME',
        'BASH_ENV',
        'BASH_FUNC_ls__',
        'LD_LIBRARY_PATH',
        'LD_PRELOAD',
        'NODE_OPTIONS',
        'PATH',
        'PYTHONPATH',
      ].sort(),
    );
  });

  it('buildStudentEnv passes only allow-listed harness variables and sets the identity', () => {
    const { env } = buildStudentEnv({
      userName: 'student',
      home: '/home/student',
      shell: '/usr/bin/bash',
      hostname: 'karotte-x',
      passEnv: ['LANG'],
      extra: { TASK: 'x' },
      harnessEnv: { LANG: 'de_DE.UTF-8', OPENAI_API_KEY: 'secret', KAROTTE_TOKEN: 'secret' },
    });
    expect(env['LANG']).toBe('de_DE.UTF-8');
    expect(env['TASK']).toBe('x');
    expect(JSON.stringify(env)).not.toContain('secret');
    expect(env).toMatchObject({ HOME: '/home/student', USER: 'student', LOGNAME: 'student', TMPDIR: '/tmp' });
  });
});
