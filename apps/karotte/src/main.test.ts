import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from './main.js';
import { VERSION } from './version.js';

function capture(): { io: Parameters<typeof main>[1]; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    io: { stdout: { write: (s: string) => (out += s) }, stderr: { write: (s: string) => (err += s) } },
    out: () => out,
    err: () => err,
  };
}

describe('karotte main', () => {
  it('prints help with exit 0', async () => {
    const c = capture();
    expect(await main(['--help'], c.io)).toBe(0);
    expect(c.out()).toContain('Usage: karotte <command>');
  });

  it('prints the version', async () => {
    const c = capture();
    expect(await main(['--version'], c.io)).toBe(0);
    expect(c.out()).toBe(`${VERSION}\n`);
  });

  it('exits 2 with a clear message on an unknown command', async () => {
    const c = capture();
    expect(await main(['frobnicate'], c.io)).toBe(2);
    expect(c.err()).toContain('unknown command "frobnicate"');
    expect(c.out()).toBe('');
  });

  it('exits 2 without a command', async () => {
    const c = capture();
    expect(await main([], c.io)).toBe(2);
  });

  it('runs beforeLoad once a command is known, before it runs; never for --help, --version or a typo', async () => {
    const calls: string[] = [];
    const beforeLoad = (): Promise<void> => {
      calls.push('beforeLoad');
      return Promise.resolve();
    };
    for (const argv of [['--help'], ['--version'], ['frobnicate'], []]) {
      expect(await main(argv, capture().io, { beforeLoad })).not.toBeUndefined();
    }
    expect(calls).toEqual([]);
    const c = capture();
    expect(await main(['validate', '--help'], c.io, { beforeLoad })).toBe(0);
    expect(calls).toEqual(['beforeLoad']);
    expect(c.out()).toContain('validate');
  });

  it('does not treat prototype keys as commands', async () => {
    const c = capture();
    expect(await main(['constructor'], c.io)).toBe(2);
    expect(await main(['__proto__'], c.io)).toBe(2);
  });
});

describe('npm run --silent karotte (contract section 1)', () => {
  const root = path.resolve(import.meta.dirname, '../../..');
  it('the built bin loads neither zod nor a package for --version; a command loads them after zod is set jitless', () => {
    // A module hook in the bin's own process lists what loads, and what zod's config says
    // when the first schema-making package loads (zod's ESM instance, the one they share).
    const hook = [
      "import { registerHooks } from 'node:module';",
      'const loaded = [];',
      'registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });',
      "process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify(loaded) + '\\n'));",
    ].join('\n');
    const cli = path.join(root, 'apps', 'karotte', 'dist', 'cli.js');
    const importHook = `data:text/javascript,${encodeURIComponent(hook)}`;
    const loadedBy = (args: string[]): string[] => {
      const r = spawnSync(process.execPath, ['--import', importHook, cli, ...args], { encoding: 'utf8' });
      const line = r.stderr.split('\n').find((l) => l.startsWith('LOADED '));
      expect(line, r.stderr).toBeDefined();
      return JSON.parse(line!.slice('LOADED '.length)) as string[];
    };
    const version = loadedBy(['--version']);
    expect(version.filter((url) => url.includes('/zod/') || url.includes('/packages/'))).toEqual([]);
    const validate = loadedBy([
      'validate',
      '--task',
      path.join(root, 'apps', 'karotte', 'examples', 'quarterly-revenue'),
    ]);
    const firstPackage = validate.findIndex((url) => url.includes('/packages/'));
    const firstZod = validate.findIndex((url) => url.includes('/zod/'));
    expect(firstPackage).toBeGreaterThan(-1);
    // zod loads (for its config) before any package that makes schemas.
    expect(firstZod).toBeGreaterThan(-1);
    expect(firstZod).toBeLessThan(firstPackage);
  });

  it('runs the built CLI from the repository root', () => {
    const out = execFileSync('npm', ['run', '--silent', 'karotte', '--', '--version'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(out).toBe(`${VERSION}\n`);
    const bad = spawnSync('npm', ['run', '--silent', 'karotte', '--', 'nope'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('unknown command "nope"');
  });
});
