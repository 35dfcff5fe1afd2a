// Unit tests of the IPC and mount-table parsers (text in, objects out).
import { describe, expect, it } from 'vitest';
import { parseSysvTable } from './ipc.js';
import { ramMountPoints } from './reclaim.js';

const SHM = [
  '       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap',
  '  12345678         17   600                  4096  1000  1000      0  5000  5000  5000  5000          0          0 1700000000                     0                     0',
  '         0         18  1600                  4096  1000  1000      1     0     0  5000  5000          0          0 1700000000                     0                     0',
  '  87654321         19   644                  4096  1000  1000      0  6000  6000  6000  6000          0          0 1700000000                     0                     0',
  '',
].join('\n');

const SEM = [
  '       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime',
  '         0          3   600          1     0     0  5000  5000          0 1700000000',
].join('\n');

describe('parseSysvTable', () => {
  it('reads id, creator, owner and the SHM_DEST flag by header name', () => {
    expect(parseSysvTable('shm', SHM)).toEqual([
      { kind: 'shm', id: 17, cuid: 5000, uid: 5000, pendingDestroy: false },
      { kind: 'shm', id: 18, cuid: 5000, uid: 0, pendingDestroy: true },
      { kind: 'shm', id: 19, cuid: 6000, uid: 6000, pendingDestroy: false },
    ]);
  });

  it('keeps the creator when the owner was given away (IPC_SET)', () => {
    expect(parseSysvTable('sem', SEM)).toEqual([
      { kind: 'sem', id: 3, cuid: 5000, uid: 0, pendingDestroy: false },
    ]);
  });

  it('returns nothing for an unknown header rather than guessing columns', () => {
    expect(parseSysvTable('msg', 'a b c\n1 2 3\n')).toEqual([]);
  });
});

describe('ramMountPoints', () => {
  it('lists read-write tmpfs and ramfs mount points, decoded and deduplicated', () => {
    const mountinfo = [
      '22 1 0:21 / /dev/shm rw,relatime shared:3 - tmpfs tmpfs rw,size=100k',
      '23 22 0:22 / /dev/shm rw,relatime - tmpfs tmpfs rw',
      '24 1 0:23 / /run/with\\040space rw,nosuid - tmpfs tmpfs rw',
      '25 1 0:24 / /mnt/ro ro,relatime - tmpfs tmpfs ro',
      '26 1 0:25 / /ram rw - ramfs ramfs rw',
      '27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw',
      '28 1 0:26 / /proc rw - proc proc rw',
    ].join('\n');
    expect(ramMountPoints(mountinfo)).toEqual(['/dev/shm', '/run/with space', '/ram']);
  });
});
