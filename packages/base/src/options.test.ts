import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BadArgumentError } from './errors.js';
import { parseOptions } from './options.js';

const schema = z
  .object({
    limits: z.object({ memoryBytes: z.number().int().positive() }).strict(),
    name: z.string().optional(),
  })
  .strict();

function failure(input: unknown): BadArgumentError {
  try {
    parseOptions(schema, input, 'options');
  } catch (error) {
    if (error instanceof BadArgumentError) return error;
    throw error;
  }
  throw new Error('expected a failure');
}

describe('parseOptions', () => {
  it('returns parsed data', () => {
    expect(parseOptions(schema, { limits: { memoryBytes: 5 } }, 'options')).toEqual({
      limits: { memoryBytes: 5 },
    });
  });

  it('names the offending field for bad values', () => {
    for (const bad of [-1, Number.NaN, 1.5, '5']) {
      const error = failure({ limits: { memoryBytes: bad } });
      expect(error.field).toBe('limits.memoryBytes');
      expect(error.message).toContain('limits.memoryBytes');
      expect(error.cause).toBeDefined();
    }
  });

  it('names unknown keys, nested too', () => {
    expect(failure({ limits: { memoryBytes: 1 }, nmae: 'x' }).field).toBe('nmae');
    const nested = failure({ limits: { memoryBytes: 1, memoryByte: 2 } });
    expect(nested.field).toBe('limits.memoryByte');
    expect(nested.message).toContain('unknown field limits.memoryByte');
  });
});
