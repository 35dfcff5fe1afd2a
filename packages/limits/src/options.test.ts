// Bad options give typed errors naming the field, before anything touches the system.
import { describe, expect, it } from 'vitest';
import { BadArgumentError } from '@karotte/base';
import { createEpisodeLimits } from './episode.js';
import { createGroup } from './group.js';
import { createLaunchPrefix } from './launch.js';
import { probe } from './probe.js';
import { createQuota, createQuotaPool } from './quota.js';
import { recoverLimitLeftovers } from './recover.js';
import { createWatchdog } from './watchdog.js';

async function failure(run: () => unknown): Promise<BadArgumentError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof BadArgumentError) return error;
    throw error;
  }
  throw new Error('expected a BadArgumentError');
}

const cases: [string, () => unknown, string][] = [
  ['negative memory', () => createGroup({ memoryBytes: -1 }), 'memoryBytes'],
  ['NaN memory', () => createGroup({ memoryBytes: Number.NaN }), 'memoryBytes'],
  ['fractional pids', () => createGroup({ pids: 1.5 }), 'pids'],
  ['zero pids', () => createGroup({ pids: 0 }), 'pids'],
  ['pids past PID_MAX_LIMIT', () => createGroup({ pids: 4_194_305 }), 'pids'],
  ['the old name pidsMax (removed)', () => createGroup({ pidsMax: 64 } as never), 'pidsMax'],
  ['infinite memory', () => createGroup({ memoryBytes: Number.POSITIVE_INFINITY }), 'memoryBytes'],
  ['cpu weight out of range', () => createGroup({ cpuWeight: 10_001 }), 'cpuWeight'],
  ['unknown key', () => createGroup({ memoryByte: 5 } as never), 'memoryByte'],
  ['name without karotte', () => createGroup({ name: 'student' }), 'name'],
  ['name with a slash', () => createGroup({ name: 'karotte/../x' }), 'name'],
  ['relative state dir', () => createGroup({ stateDir: 'run/karotte' }), 'stateDir'],
  ['negative nofile', () => createGroup({ rlimits: { nofile: -5 } }), 'rlimits.nofile'],
  ['unknown rlimit', () => createGroup({ rlimits: { nofiles: 5 } as never }), 'rlimits.nofiles'],
  ['bad hierarchy', () => createGroup({ hierarchy: { version: 3 } as never }), 'hierarchy.version'],
  ['negative disk bytes', () => createQuota({ ownerUid: 1000, bytes: -1 }), 'bytes'],
  ['NaN inodes', () => createQuota({ ownerUid: 1000, inodes: Number.NaN }), 'inodes'],
  ['tiny disk', () => createQuota({ ownerUid: 1000, bytes: 4096 }), 'bytes'],
  ['disk past 1 PiB', () => createQuota({ ownerUid: 1000, bytes: 2 ** 50 + 4096 }), 'bytes'],
  ['too few inodes', () => createQuota({ ownerUid: 1000, inodes: 63 }), 'inodes'],
  ['missing owner', () => createQuota({} as never), 'ownerUid'],
  ['negative owner', () => createQuota({ ownerUid: -1 }), 'ownerUid'],
  ['unknown quota key', () => createQuota({ ownerUid: 1000, size: 3 } as never), 'size'],
  ['pool size zero', () => createQuotaPool({ size: 0 }), 'size'],
  ['pool unknown key', () => createQuotaPool({ ownerUid: 5 } as never), 'ownerUid'],
  ['watchdog root uid', () => createWatchdog({ uid: 0, onViolation: () => undefined }), 'uid'],
  ['watchdog no callback', () => createWatchdog({ uid: 5000 } as never), 'onViolation'],
  [
    'watchdog NaN memory',
    () => createWatchdog({ uid: 5000, memoryBytes: Number.NaN, onViolation: () => undefined }),
    'memoryBytes',
  ],
  ['probe unknown key', () => probe({ quick: true } as never), 'quick'],
  ['recover relative dir', () => recoverLimitLeftovers({ imageDir: 'var/lib' }), 'imageDir'],
  ['episode nested group field', () => createEpisodeLimits({ group: { pids: -3 } }), 'group.pids'],
  [
    'episode nested quota field',
    () => createEpisodeLimits({ quota: { ownerUid: 1000, bytes: Number.NaN } }),
    'quota.bytes',
  ],
  ['launch prefix bad rlimit', () => createLaunchPrefix({ rlimits: { coreBytes: -1 } }), 'rlimits.coreBytes'],
];

describe('option validation', () => {
  for (const [label, run, field] of cases) {
    it(`${label} → BadArgumentError naming ${field}`, async () => {
      const error = await failure(run);
      expect(error.code).toBe('INVALID_ARGUMENT');
      expect(error.field).toBe(field);
      expect(error.message).toContain(field);
    });
  }
});
