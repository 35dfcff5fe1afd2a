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

  it('does not treat prototype keys as commands', async () => {
    const c = capture();
    expect(await main(['constructor'], c.io)).toBe(2);
    expect(await main(['__proto__'], c.io)).toBe(2);
  });
});

describe('npm run --silent karotte (contract section 1)', () => {
  const root = path.resolve(import.meta.dirname, '../../..');
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
