import { describe, expect, it } from 'vitest';
import { MiB, misbehaviorRecordSchema } from '@karotte/base';
import { toMisbehavior } from './events.js';
import type { LimitEvent } from './events.js';
import { sysvShmBytesByCreator } from './watchdog.js';

const base = { count: 1, atMs: 1, observed: 1, source: 'x' };

describe('limit events', () => {
  it('become misbehavior records with the right codes', () => {
    const events: LimitEvent[] = [
      { ...base, limit: 'memory', kind: 'oom_kill', limitValue: 64 * MiB, count: 2 },
      { ...base, limit: 'memory', kind: 'reaped', limitValue: 64 * MiB },
      { ...base, limit: 'pids', kind: 'max', limitValue: 64 },
      { ...base, limit: 'disk_bytes', kind: 'full', limitValue: 32 * MiB },
      { ...base, limit: 'disk_inodes', kind: 'full', limitValue: 256 },
    ];
    const records = events.map(toMisbehavior);
    expect(records.map((record) => record.code)).toEqual([
      'MEMORY_LIMIT',
      'MEMORY_LIMIT',
      'PIDS_LIMIT',
      'DISK_LIMIT',
      'DISK_LIMIT',
    ]);
    expect(records[0]!.message).toBe(
      'the student hit the 64 MiB memory limit: the kernel killed 2 processes',
    );
    for (const record of records) expect(misbehaviorRecordSchema.parse(record)).toEqual(record);
  });
});

describe('SysV shm accounting', () => {
  const text = [
    '       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap',
    '         0          1   600              1048576   100   100      0  5000  5000  5000  5000          0          0          1               1048576                     0',
    '         0          2   600              4194304   101   101      0  1234  1234  5000  5000          0          0          1                  8192                     0',
    '         0          3   600              2097152   102   102      0  5000  5000  1234  1234          0          0          1               2097152                     0',
  ].join('\n');

  it('charges segments to their creator even after IPC_SET handed them to another uid', () => {
    expect(sysvShmBytesByCreator(text, 5000)).toBe(1_048_576 + 8192);
    expect(sysvShmBytesByCreator(text, 1234)).toBe(2_097_152);
    expect(sysvShmBytesByCreator('garbage', 5000)).toBe(0);
  });
});
