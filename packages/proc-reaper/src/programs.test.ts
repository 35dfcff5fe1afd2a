// The programs proc-reaper runs are real files (src/programs/), inlined at build time: the
// imported text is the file's, byte for byte, and the shell that runs each one parses it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { resolveTrustedBinary } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { IN_COHORT_SCRIPT } from './in-cohort.js';
import keysScript from './programs/keys.pl?raw';
import mqueueProgram from './programs/mqueue.pl?raw';

const programs = [
  { file: 'in-cohort.sh', text: IN_COHORT_SCRIPT, shell: 'sh' },
  { file: 'mqueue.pl', text: mqueueProgram, shell: 'perl' },
  { file: 'keys.pl', text: keysScript, shell: 'perl' },
];

describe('programs', () => {
  it.each(programs)('$file is imported as it is and parses in $shell', ({ file, text, shell }) => {
    expect(text).toBe(fs.readFileSync(new URL(`programs/${file}`, import.meta.url), 'utf8'));
    const check = spawnSync(resolveTrustedBinary(shell), shell === 'perl' ? ['-c', '-'] : ['-n'], {
      input: text,
      encoding: 'utf8',
    });
    expect(check.stderr).toBe(shell === 'perl' ? '- syntax OK\n' : '');
    expect(check.status).toBe(0);
  });
});
