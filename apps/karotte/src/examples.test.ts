// What the app hides from the student besides the task's own paths. The end-to-end proof is
// in test/cli.integration.test.ts; on a host whose checkout is already outside the sandbox's
// system view that test would pass without this list, so the list itself is checked here.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { APP_DIR, appHiddenPaths } from './app-world.js';
import { EXAMPLES_DIR } from './examples.js';

describe('appHiddenPaths', () => {
  it("hides the app's directory, which holds every example's answer key and the fixtures' copies", () => {
    const hidden = appHiddenPaths(['/srv/out-a', '/srv/out-b']);
    expect(hidden).toEqual([APP_DIR, '/srv/out-a', '/srv/out-b']);
    expect(EXAMPLES_DIR.startsWith(`${APP_DIR}${path.sep}`)).toBe(true);
    const keys = [
      path.join(EXAMPLES_DIR, 'quarterly-revenue', 'hidden'),
      path.join(APP_DIR, 'test', 'fixtures', 'weakened-revenue', 'hidden'),
    ];
    for (const key of keys) {
      expect(fs.existsSync(key), key).toBe(true);
      expect(key.startsWith(`${APP_DIR}${path.sep}`)).toBe(true);
    }
  });
});
