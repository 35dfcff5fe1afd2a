import { BadArgumentError } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { testCollector, testCollectorOptionsSchema } from './index.js';

const never = () => Promise.reject(new Error('the factory is never called by these tests'));

describe('testCollector options', () => {
  it('defaults: nothing skipped, two minutes a case', () => {
    expect(testCollectorOptionsSchema.parse({})).toEqual({ skip: {}, caseTimeoutMs: 120_000 });
  });

  it('an unknown skip name or an empty reason is refused before any case is registered', () => {
    for (const [options, field] of [
      [{ skip: { unkillable: 'typo' } }, 'skip.unkillable'],
      [{ skip: { unkillableProcess: '  ' } }, 'skip.unkillableProcess'],
      [{ retries: 2 }, 'retries'],
    ] as const) {
      let error: unknown;
      try {
        testCollector('options', never, options as never);
      } catch (caught) {
        error = caught;
      }
      expect(BadArgumentError.isInstance(error), JSON.stringify(options)).toBe(true);
      expect(error).toMatchObject({ field });
    }
  });
});
