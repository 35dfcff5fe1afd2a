// hostViewHidden() on a fake root this test builds: which top-level entries a 'system' view
// covers. Only real directories: files at `/` and symlinks (dangling, or into a covered or a
// system directory) are left alone, so setup never has to mount over them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hostViewHidden } from './confinement/plan.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('hostViewHidden', () => {
  it('covers top-level directories outside SYSTEM_ROOTS and var/tmp, nothing else', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-hostview-'));
    made.push(root);
    for (const dir of ['usr', 'etc', 'var', 'boot', 'work', 'srv']) fs.mkdirSync(path.join(root, dir));
    fs.writeFileSync(path.join(root, 'swap.img'), '');
    fs.writeFileSync(path.join(root, 'zz-after-run'), '');
    fs.symlinkSync('boot/vmlinuz-missing', path.join(root, 'vmlinuz'));
    fs.symlinkSync('work', path.join(root, 'data'));
    fs.symlinkSync('usr/bin', path.join(root, 'bin'));
    expect(hostViewHidden('system', root).sort()).toEqual(
      ['boot', 'srv', 'var/tmp', 'work'].map((name) => path.join(root, name)),
    );
    expect(hostViewHidden('all', root)).toEqual([]);
  });
});
