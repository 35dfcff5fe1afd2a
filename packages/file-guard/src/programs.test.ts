// The as-uid helper's program is a real file (src/programs/helper.cjs), inlined at build time:
// the imported text is the file's, byte for byte, Node parses it as CommonJS, and it strips
// the request prefix the harness sends.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HELPER_REQUEST_PREFIX, HELPER_SOURCE } from './helper-source.js';

describe('programs', () => {
  it('helper.cjs is imported as it is and parses', () => {
    expect(HELPER_SOURCE).toBe(fs.readFileSync(new URL('programs/helper.cjs', import.meta.url), 'utf8'));
    // `node -e` runs it as CommonJS: a module-syntax check of the same text.
    const result = spawnSync(process.execPath, ['--check', '-'], { input: HELPER_SOURCE, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('strips the request prefix the harness sends', () => {
    expect(HELPER_SOURCE).toContain(`arg.slice('${HELPER_REQUEST_PREFIX}'.length)`);
  });
});
