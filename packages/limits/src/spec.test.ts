// The student limits schema: one bound per limit, its default, and the primitives below it
// (group, quota, rlimits) accepting every value it accepts.
import { describe, expect, it } from 'vitest';
import { GiB, MiB } from '@karotte/base';
import { groupOptionsSchema } from './group.js';
import { rlimitsSchema } from './launch.js';
import { quotaOptionsSchema, quotaPoolOptionsSchema } from './quota.js';
import { DEFAULT_DISK_INODES, defaultDiskInodes, studentLimitsSchema } from './spec.js';

/** [limit, smallest accepted, largest accepted]. */
const bounds: [keyof typeof studentLimitsSchema.shape, number, number][] = [
  ['memoryBytes', 16 * MiB, Number.MAX_SAFE_INTEGER],
  ['pids', 16, 4_194_304],
  ['cpuWeight', 1, 10_000],
  ['diskBytes', 8 * MiB, 2 ** 50],
  ['diskInodes', 64, 2 ** 32 - 1],
  ['nofile', 16, 1_048_576],
  ['fsizeBytes', 1, Number.MAX_SAFE_INTEGER],
];

const accepts = (limits: Record<string, unknown>): boolean => studentLimitsSchema.safeParse(limits).success;

describe('studentLimitsSchema', () => {
  it.each(bounds)('%s: %d to %d, and nothing outside', (name, min, max) => {
    expect(accepts({ [name]: min })).toBe(true);
    expect(accepts({ [name]: max })).toBe(true);
    expect(accepts({ [name]: min - 1 })).toBe(false);
    // Past MAX_SAFE_INTEGER, +1 is not representable: the next safe step up is refused too.
    expect(accepts({ [name]: max === Number.MAX_SAFE_INTEGER ? max + 2 : max + 1 })).toBe(false);
    expect(accepts({ [name]: min + 0.5 })).toBe(false);
    expect(accepts({ [name]: Number.NaN })).toBe(false);
  });

  it('applies one default per limit, and leaves derived ones unset', () => {
    expect(studentLimitsSchema.parse({})).toEqual({
      pids: 512,
      diskBytes: GiB,
      nofile: 1024,
      memlockBytes: 65536,
    });
  });

  it('is strict: a misspelled limit is an error naming it', () => {
    const result = studentLimitsSchema.safeParse({ pidsMax: 64 });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]).toMatchObject({ code: 'unrecognized_keys', keys: ['pidsMax'] });
  });

  it('derives the inode count from the disk size: one per 16 KiB, 64 to 65536', () => {
    expect(defaultDiskInodes(8 * MiB)).toBe(512);
    expect(defaultDiskInodes(GiB)).toBe(DEFAULT_DISK_INODES);
    expect(defaultDiskInodes(2 ** 50)).toBe(DEFAULT_DISK_INODES);
    expect(defaultDiskInodes(0)).toBe(64);
  });
});

describe('the primitives accept every student limit', () => {
  const value = (name: string, index: 1 | 2): number => bounds.find(([n]) => n === name)![index];

  it.each([
    ['smallest', 1],
    ['largest', 2],
  ] as const)('the group, quota and rlimits take the %s value of each', (_, index) => {
    const group = groupOptionsSchema.parse({
      memoryBytes: value('memoryBytes', index),
      pids: value('pids', index),
      cpuWeight: value('cpuWeight', index),
      rlimits: { nofile: value('nofile', index), fsizeBytes: value('fsizeBytes', index) },
    });
    expect(group.pids).toBe(value('pids', index));
    const quota = { bytes: value('diskBytes', index), inodes: value('diskInodes', index) };
    expect(quotaOptionsSchema.parse({ ...quota, ownerUid: 1000 })).toMatchObject(quota);
    expect(quotaPoolOptionsSchema.parse(quota)).toMatchObject(quota);
    expect(rlimitsSchema.parse({ nofile: value('nofile', index) }).nofile).toBe(value('nofile', index));
  });

  it('a quota gets the same default size and derived inode count as a student', () => {
    expect(quotaOptionsSchema.parse({ ownerUid: 1000 })).toMatchObject({ bytes: GiB, inodes: 65_536 });
    expect(quotaPoolOptionsSchema.parse({ bytes: 64 * MiB })).toMatchObject({ inodes: 4096 });
  });

  it('a group has the same pids default as a student, and no second name for it', () => {
    expect(groupOptionsSchema.parse({}).pids).toBe(512);
    expect(groupOptionsSchema.parse({ pids: 64 }).pids).toBe(64);
    const old = groupOptionsSchema.safeParse({ pidsMax: 64 });
    expect(old.error?.issues[0]).toMatchObject({ code: 'unrecognized_keys', keys: ['pidsMax'] });
  });
});
