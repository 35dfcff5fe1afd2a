import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from './main.js';
import { VERSION } from './version.js';
import { LIST_LOADED_MODULES, loadedModules } from '../../../test/support/index.js';

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

  it('runs beforeCommand once a command is known, before it loads; never for --version or --help', async () => {
    const calls: string[] = [];
    const beforeCommand = (): Promise<void> => {
      calls.push('before');
      return Promise.resolve();
    };
    await main(['--version'], capture().io, { beforeCommand });
    await main(['--help'], capture().io, { beforeCommand });
    await main(['frobnicate'], capture().io, { beforeCommand });
    expect(calls).toEqual([]);
    const c = capture();
    expect(await main(['validate', '--help'], c.io, { beforeCommand })).toBe(0);
    expect(calls).toEqual(['before']);
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
  it('the built bin loads neither zod nor a package for --version (each command loads its own)', () => {
    const cli = path.join(root, 'apps', 'karotte', 'dist', 'cli.js');
    const loadedBy = (args: string[]): string[] =>
      loadedModules(
        spawnSync(process.execPath, [...LIST_LOADED_MODULES, cli, ...args], { encoding: 'utf8' }).stderr,
      ).filter((url) => url.startsWith('file:'));
    // zod and the packages are bundled into the CLI's chunks: a chunk holding zod's schema
    // classes (`$ZodType`) or the packages' code (the reaper's helper) is what --version must not load.
    const heavy = (url: string): boolean =>
      url.includes('/zod/') ||
      url.includes('/packages/') ||
      /"\$ZodType"|karotte-in-cohort/.test(fs.readFileSync(fileURLToPath(url), 'utf8'));
    expect(loadedBy(['--version']).filter(heavy)).toEqual([]);
    // The list does hold them when a command needs them.
    const task = path.join(root, 'apps', 'karotte', 'examples', 'quarterly-revenue');
    expect(loadedBy(['validate', '--task', task]).filter(heavy).length).toBeGreaterThan(0);
  });

  it('the built bin parses with zod jitless once a command runs (no schema compiled with new Function)', () => {
    const cli = path.join(root, 'apps', 'karotte', 'dist', 'cli.js');
    const task = path.join(root, 'apps', 'karotte', 'examples', 'quarterly-revenue');
    // zod keeps its configuration on globalThis, and compiles with the Function constructor: a
    // preload counts the functions made from source and reads the setting back at exit.
    const probe = [
      'let made = 0;',
      'const Original = globalThis.Function;',
      'globalThis.Function = new Proxy(Original, { construct(target, args) { made += 1; return Reflect.construct(target, args); }, apply(target, self, args) { made += 1; return Reflect.apply(target, self, args); } });',
      "process.on('exit', () => process.stderr.write('jitless=' + String(globalThis.__zod_globalConfig?.jitless) + ' made=' + made + '\\n'));",
    ].join('\n');
    const run = (args: string[]): string =>
      spawnSync(
        process.execPath,
        ['--import', `data:text/javascript,${encodeURIComponent(probe)}`, cli, ...args],
        {
          encoding: 'utf8',
        },
      ).stderr;
    expect(run(['--version'])).toContain('jitless=undefined made=0');
    // A command parses its task with zod: not one function made from source on the way.
    expect(run(['validate', '--task', task])).toContain('jitless=true made=0');
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
