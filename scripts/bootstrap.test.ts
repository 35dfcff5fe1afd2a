// scripts/bootstrap.cjs, the first file `npm run setup|test|karotte` runs: as root it warns when
// the compile cache npm reads is a directory another user made or can write.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { tempDir } from '../test/support/index.js';

const bootstrap = path.resolve(import.meta.dirname, 'bootstrap.cjs');

/** stderr of `node bootstrap.cjs nope` (the usage error: nothing else runs) with `cache` named. */
function stderrWith(cache: string): string {
  return spawnSync(process.execPath, [bootstrap, 'nope'], {
    encoding: 'utf8',
    env: { PATH: '/usr/bin:/bin', NODE_COMPILE_CACHE: cache },
  }).stderr;
}

describe('bootstrap.cjs and the shared compile cache', () => {
  it('as root, warns of a cache directory another user owns or others can write (never without root)', () => {
    const { dir, cleanup } = tempDir('bootstrap-cache');
    onTestFinished(cleanup);
    fs.chmodSync(dir, 0o777);
    if (process.getuid?.() !== 0) {
      // The risk is root running code it did not write: another user is told nothing.
      expect(stderrWith(dir)).not.toContain('warning');
      return;
    }
    expect(stderrWith(dir)).toContain(`[karotte] warning: ${dir} (Node.js compile cache`);
    fs.chmodSync(dir, 0o755);
    expect(stderrWith(dir)).not.toContain('warning');
    fs.chownSync(dir, 65534, 65534);
    expect(stderrWith(dir)).toContain('whoever can write it can run code as root');
    // A cache that does not exist yet is nobody's: nothing to say.
    expect(stderrWith(path.join(dir, 'missing'))).not.toContain('warning');
  });
});
