import { BadArgumentError } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { testStudentWorld, testStudentWorldOptionsSchema } from './index.js';

const never = () => Promise.reject(new Error('the factory is never called by these tests'));

describe('testStudentWorld options', () => {
  it('defaults: nothing skipped, 1 MiB of output, two minutes a case', () => {
    expect(testStudentWorldOptionsSchema.parse({})).toEqual({
      skip: {},
      outputFloodBytes: 1024 * 1024,
      caseTimeoutMs: 120_000,
    });
  });

  it('an unknown skip name or an empty reason is refused before any case is registered', () => {
    for (const [options, field] of [
      [{ skip: { network: 'typo' } }, 'skip.network'],
      [{ skip: { files: '' } }, 'skip.files'],
      [{ outputFloodBytes: 10 }, 'outputFloodBytes'],
    ] as const) {
      let error: unknown;
      try {
        testStudentWorld('options', never, options as never);
      } catch (caught) {
        error = caught;
      }
      expect(BadArgumentError.isInstance(error), JSON.stringify(options)).toBe(true);
      expect(error).toMatchObject({ field });
    }
  });
});
