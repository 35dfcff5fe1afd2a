// The programs limits runs are real files (src/programs/), inlined at build time: the imported
// text is the file's, byte for byte, and sh parses it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { resolveTrustedBinary } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { STUDENT_OOM_SCORE_ADJ } from './constants.js';
import { LAUNCH_SCRIPT } from './launch.js';
import prepareScript from './programs/prepare-quota.sh?raw';

const programs = [
  { file: 'launch.sh', text: LAUNCH_SCRIPT },
  { file: 'prepare-quota.sh', text: prepareScript },
];

describe('programs', () => {
  it.each(programs)('$file is imported as it is and parses in sh', ({ file, text }) => {
    expect(text).toBe(fs.readFileSync(new URL(`programs/${file}`, import.meta.url), 'utf8'));
    const check = spawnSync(resolveTrustedBinary('sh'), ['-n'], { input: text, encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
  });

  it('the launch script sets oom_score_adj to STUDENT_OOM_SCORE_ADJ', () => {
    expect(LAUNCH_SCRIPT).toContain(`printf '%s\\n' ${STUDENT_OOM_SCORE_ADJ} > /proc/self/oom_score_adj`);
  });
});
