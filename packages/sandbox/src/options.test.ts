// The sandbox's limits are @karotte/limits' student limits schema: the same bounds and defaults,
// so a limit the task schema accepts is one the sandbox accepts. One command-timeout bound.
import { describe, expect, it } from 'vitest';
import { BadArgumentError, MiB } from '@karotte/base';
import { MAX_COMMAND_TIMEOUT_MS, studentLimitsSchema } from '@karotte/limits';
import { execOptionsSchema, sandboxLimitsSchema, sandboxOptionsSchema } from './options.js';
import { createSandbox } from './sandbox.js';

/** The smallest and largest value of each student limit, read from the limits schema itself. */
function bounds(name: keyof typeof studentLimitsSchema.shape): [number, number] {
  const field = studentLimitsSchema.shape[name];
  const rule = field.unwrap();
  return [rule.minValue!, rule.maxValue!];
}

describe('sandboxLimitsSchema', () => {
  it.each(Object.keys(studentLimitsSchema.shape) as (keyof typeof studentLimitsSchema.shape)[])(
    '%s: the student schema bounds, both ways',
    (name) => {
      const [min, max] = bounds(name);
      for (const value of [min, max, min - 1, max + (max === Number.MAX_SAFE_INTEGER ? 2 : 1)]) {
        expect(sandboxLimitsSchema.safeParse({ [name]: value }).success, `${name} ${value}`).toBe(
          studentLimitsSchema.safeParse({ [name]: value }).success,
        );
      }
    },
  );

  it('has the student defaults, plus the sizes of its own /tmp and /dev/shm', () => {
    expect(sandboxOptionsSchema.parse({}).limits).toEqual({
      ...studentLimitsSchema.parse({}),
      tmpBytes: 256 * MiB,
      shmBytes: 64 * MiB,
    });
  });

  it('refuses a 4 MiB disk, as task.json does (an ext4 image needs 8 MiB)', () => {
    expect(sandboxLimitsSchema.safeParse({ diskBytes: 4 * MiB }).success).toBe(false);
  });

  it('has one name for the process limit: the old pidsMax is refused, naming the field', async () => {
    expect(sandboxLimitsSchema.parse({}).pids).toBe(512);
    expect(sandboxLimitsSchema.parse({ pids: 96 }).pids).toBe(96);
    const error: unknown = await createSandbox({ limits: { pidsMax: 96 } as never }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadArgumentError);
    expect((error as BadArgumentError).field).toContain('pidsMax');
  });
});

describe('command timeouts', () => {
  it('exec() and the default take up to MAX_COMMAND_TIMEOUT_MS (the bound of task.json too)', () => {
    expect(execOptionsSchema.safeParse({ timeoutMs: MAX_COMMAND_TIMEOUT_MS }).success).toBe(true);
    expect(execOptionsSchema.safeParse({ timeoutMs: MAX_COMMAND_TIMEOUT_MS + 1 }).success).toBe(false);
    expect(sandboxOptionsSchema.safeParse({ commandTimeoutMs: MAX_COMMAND_TIMEOUT_MS }).success).toBe(true);
    expect(sandboxOptionsSchema.safeParse({ commandTimeoutMs: MAX_COMMAND_TIMEOUT_MS + 1 }).success).toBe(
      false,
    );
  });
});
