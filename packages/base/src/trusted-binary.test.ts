import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BadArgumentError } from './errors.js';
import { TrustedBinaryError, resolveTrustedBinary } from './trusted-binary.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('resolveTrustedBinary', () => {
  it('finds system binaries in the trusted directories', () => {
    const sh = resolveTrustedBinary('sh');
    expect(path.isAbsolute(sh)).toBe(true);
    expect(path.basename(sh)).toBe('sh');
  });

  it('never consults PATH', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-path-'));
    made.push(dir);
    fs.writeFileSync(path.join(dir, 'karotte-only-on-path'), '#!/bin/sh\n', { mode: 0o755 });
    const saved = process.env['PATH'];
    process.env['PATH'] = `${dir}:${saved ?? ''}`;
    try {
      expect(() => resolveTrustedBinary('karotte-only-on-path')).toThrow(TrustedBinaryError);
      expect(resolveTrustedBinary('sh')).not.toContain(dir);
    } finally {
      process.env['PATH'] = saved;
    }
  });

  it('refuses a binary in a directory writable by others, without falling back', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bin-'));
    made.push(dir);
    fs.chmodSync(dir, 0o777);
    fs.writeFileSync(path.join(dir, 'sh'), '#!/bin/sh\n', { mode: 0o755 });
    let error: unknown;
    try {
      resolveTrustedBinary('sh', { dirs: [dir, '/bin'] });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(TrustedBinaryError);
    expect((error as TrustedBinaryError).code).toBe('UNTRUSTED_BINARY');
  });

  // Root only: the chain needs root-owned directories that only root can write, outside /tmp.
  it.skipIf(process.getuid?.() !== 0)('refuses a link chain through a directory others can write', () => {
    const base = fs.mkdtempSync('/run/karotte-chain-');
    made.push(base);
    fs.chmodSync(base, 0o755);
    for (const dir of ['bin', 'mid', 'real']) fs.mkdirSync(path.join(base, dir), { mode: 0o755 });
    fs.writeFileSync(path.join(base, 'real', 'tool'), '#!/bin/sh\n', { mode: 0o755 });
    // bin/tool -> ../mid/tool -> <base>/real/tool: relative and absolute hops.
    fs.symlinkSync('../mid/tool', path.join(base, 'bin', 'tool'));
    fs.symlinkSync(path.join(base, 'real', 'tool'), path.join(base, 'mid', 'tool'));
    // Control: every directory on the chain is root's and only root's.
    expect(resolveTrustedBinary('tool', { dirs: [path.join(base, 'bin')] })).toBe(
      path.join(base, 'bin', 'tool'),
    );
    // The middle link's directory is writable by anyone: it could be re-pointed later.
    fs.chmodSync(path.join(base, 'mid'), 0o777);
    expect(() => resolveTrustedBinary('tool', { dirs: [path.join(base, 'bin')] })).toThrow(
      new RegExp(`${path.join(base, 'mid')} is writable by group or others`),
    );
  });

  it('rejects names with slashes', () => {
    expect(() => resolveTrustedBinary('../sh')).toThrow(BadArgumentError);
    expect(() => resolveTrustedBinary('')).toThrow(BadArgumentError);
  });
});
