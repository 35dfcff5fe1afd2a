import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { unsafeCacheDir } from './compile-cache.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('unsafeCacheDir (what may hold code root runs)', () => {
  it('refuses a directory under one anybody can write (the temporary directory)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-compile-cache-'));
    made.push(dir);
    const tmp = fs.realpathSync(os.tmpdir());
    // /tmp is 1777 on every Linux host (or owned by this user): either way it is refused.
    expect(unsafeCacheDir(fs.realpathSync(dir))).toMatch(
      new RegExp(
        `^${tmp.replaceAll('/', '\\/')} is (writable by group or others|owned by uid \\d+, not root)$`,
      ),
    );
  });

  it('refuses a path that is not a directory all the way, and one that does not exist', () => {
    expect(unsafeCacheDir('/etc/hostname')).toBe('/etc/hostname is not a directory');
    expect(unsafeCacheDir('/karotte-no-such-dir/cache')).toMatch(/^cannot stat \/karotte-no-such-dir: /);
  });

  it('accepts root-owned directories closed to group and others', () => {
    // /usr and /usr/lib are root's and 0755 on every host this runs on.
    expect(unsafeCacheDir('/usr/lib')).toBeUndefined();
  });
});
