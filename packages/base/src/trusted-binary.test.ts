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

  it('rejects names with slashes', () => {
    expect(() => resolveTrustedBinary('../sh')).toThrow(BadArgumentError);
    expect(() => resolveTrustedBinary('')).toThrow(BadArgumentError);
  });
});
