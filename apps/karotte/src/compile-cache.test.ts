import fs from 'node:fs';
import os from 'node:os';
import { describe, expect, it, onTestFinished } from 'vitest';
import { tempDir } from '../../../test/support/index.js';
import { unsafeCacheDir } from './compile-cache.js';

describe('unsafeCacheDir (what may hold code root runs)', () => {
  it('refuses a directory under one anybody can write (the temporary directory)', () => {
    const { dir, cleanup } = tempDir('compile-cache');
    onTestFinished(cleanup);
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
