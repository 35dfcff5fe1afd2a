import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskFileSchema, taskJsonSchema } from './task-schema.js';

describe('published task JSON Schema', () => {
  it('schema/task.schema.json matches the zod schema (run `pnpm --filter @karotte/core schema` after a change)', () => {
    const file = path.join(import.meta.dirname, '..', 'schema', 'task.schema.json');
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual(taskJsonSchema());
  });

  it('is closed and names the contract fields', () => {
    const schema = taskJsonSchema() as {
      additionalProperties: boolean;
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining([
        'id',
        'instructions',
        'submission',
        'grader',
        'passThreshold',
        'limits',
        'steps',
      ]),
    );
    expect(schema.required).toEqual(['id']);
  });

  it('accepts both examples', () => {
    for (const name of ['quarterly-revenue', 'roman-numerals']) {
      const file = path.resolve(import.meta.dirname, '../../../apps/karotte/examples', name, 'task.json');
      expect(taskFileSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8'))).success).toBe(true);
    }
  });
});
