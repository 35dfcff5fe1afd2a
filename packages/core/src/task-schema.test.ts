import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_COMMAND_TIMEOUT_MS, studentLimitsSchema } from '@karotte/limits';
import { execOptionsSchema, sandboxLimitsSchema } from '@karotte/sandbox';
import { taskFileSchema, taskJsonSchema, taskLimitsSchema } from './task-schema.js';

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

describe('task limits: one schema with the sandbox', () => {
  const student = ['memoryBytes', 'pids', 'diskBytes'] as const;

  it.each(student)('%s has the bounds of @karotte/limits and no default of its own', (name) => {
    const task = taskLimitsSchema.shape[name].unwrap();
    const limits = studentLimitsSchema.shape[name].unwrap();
    expect([task.minValue, task.maxValue]).toEqual([limits.minValue, limits.maxValue]);
    expect(taskLimitsSchema.parse({})).toEqual({});
  });

  it.each(student)('every %s the task accepts, the sandbox accepts, and the other way round', (name) => {
    const rule = taskLimitsSchema.shape[name].unwrap();
    const [min, max] = [rule.minValue!, rule.maxValue!];
    for (const value of [min - 1, min, max, max + (max === Number.MAX_SAFE_INTEGER ? 2 : 1)]) {
      const accepted = taskLimitsSchema.safeParse({ [name]: value }).success;
      expect(sandboxLimitsSchema.safeParse({ [name]: value }).success, `${name} ${value}`).toBe(accepted);
    }
  });

  it("commandTimeoutMs: at most MAX_COMMAND_TIMEOUT_MS, which the sandbox's exec() takes", () => {
    const rule = taskLimitsSchema.shape.commandTimeoutMs.unwrap();
    expect(rule.maxValue).toBe(MAX_COMMAND_TIMEOUT_MS);
    expect(execOptionsSchema.safeParse({ timeoutMs: rule.maxValue }).success).toBe(true);
    expect(taskLimitsSchema.safeParse({ commandTimeoutMs: MAX_COMMAND_TIMEOUT_MS + 1 }).success).toBe(false);
  });
});
