// Unit tests of the argv builder: the helper must drop to exactly the uid.
import { describe, expect, it } from 'vitest';
import { IN_COHORT_SCRIPT, inCohortArgv } from './in-cohort.js';

describe('inCohortArgv', () => {
  it('drops to the uid and gid with no groups, no_new_privs and a constant script', () => {
    const argv = inCohortArgv({ setpriv: '/usr/bin/setpriv', sh: '/bin/sh' }, 5000, 5001, 100);
    expect(argv.slice(0, 6)).toEqual([
      '/usr/bin/setpriv',
      '--reuid',
      '5000',
      '--regid',
      '5001',
      '--clear-groups',
    ]);
    expect(argv).toContain('--no-new-privs');
    expect(argv).toContain('--ambient-caps=-all,+wake_alarm');
    expect(argv.slice(-5)).toEqual(['/bin/sh', '-c', IN_COHORT_SCRIPT, 'karotte-in-cohort', '100']);
    // Nothing variable is spliced into the script.
    expect(IN_COHORT_SCRIPT).not.toMatch(/5000|5001/);
    expect(IN_COHORT_SCRIPT).toContain('kill -9 -1');
  });
});
