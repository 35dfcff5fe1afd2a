// The program the grader's sandbox runs is a real file (runner/programs/), inlined at build
// time: the imported text is the file's, byte for byte, and sh parses it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { resolveTrustedBinary } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import setupScript from './programs/setup.sh?raw';

describe('programs', () => {
  it('setup.sh is imported as it is and parses in sh', () => {
    expect(setupScript).toBe(fs.readFileSync(new URL('programs/setup.sh', import.meta.url), 'utf8'));
    const check = spawnSync(resolveTrustedBinary('sh'), ['-n'], { input: setupScript, encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
  });
});
