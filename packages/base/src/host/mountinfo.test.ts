import { describe, expect, it } from 'vitest';
import { parseMountInfo } from './mountinfo.js';

describe('parseMountInfo', () => {
  it('reads every field, decoding octal escapes in root, mount point and source', () => {
    const { entries, malformed } = parseMountInfo(
      '40 30 0:36 /a\\040b /mnt/with\\040space ro,relatime - cgroup2 cgroup2 rw,nsdelegate\n',
    );
    expect(malformed).toEqual([]);
    expect(entries).toEqual([
      {
        id: 40,
        parentId: 30,
        root: '/a b',
        mountPoint: '/mnt/with space',
        options: ['ro', 'relatime'],
        readOnly: true,
        fsType: 'cgroup2',
        source: 'cgroup2',
        superOptions: ['rw', 'nsdelegate'],
      },
    ]);
  });

  it('decodes tab, newline and backslash, and a source with a space', () => {
    const [entry] = parseMountInfo('1 0 8:1 / /a\\011b\\012c\\134d rw - ext4 /dev/my\\040disk rw').entries;
    expect(entry?.mountPoint).toBe('/a\tb\nc\\d');
    expect(entry?.source).toBe('/dev/my disk');
    expect(entry?.readOnly).toBe(false);
  });

  it('skips optional fields (shared:, master:) to the separator', () => {
    const [entry] = parseMountInfo(
      '22 1 0:21 / /dev/shm rw,nosuid,nodev shared:3 master:1 - tmpfs tmpfs rw,size=100k',
    ).entries;
    expect(entry).toMatchObject({ mountPoint: '/dev/shm', fsType: 'tmpfs', source: 'tmpfs' });
    expect(entry?.superOptions).toEqual(['rw', 'size=100k']);
  });

  it('a mount point named "-" is not the separator', () => {
    const [entry] = parseMountInfo('5 1 0:9 / - rw - tmpfs src rw').entries;
    expect(entry).toMatchObject({ mountPoint: '-', fsType: 'tmpfs', source: 'src' });
  });

  it('keeps malformed lines instead of dropping them, and ignores blank lines', () => {
    const { entries, malformed } = parseMountInfo(
      '30 1 0:5 / /a rw - tmpfs src rw\nnonsense line\n\nx 1 0:5 / /b rw - tmpfs s rw\n31 1 0:5 / /c rw - tmpfs\n',
    );
    expect(entries.map((entry) => entry.mountPoint)).toEqual(['/a']);
    expect(malformed).toEqual(['nonsense line', 'x 1 0:5 / /b rw - tmpfs s rw', '31 1 0:5 / /c rw - tmpfs']);
  });

  it('reads the real /proc/self/mountinfo with no malformed line', async () => {
    const { readFile } = await import('node:fs/promises');
    const { entries, malformed } = parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8'));
    expect(malformed).toEqual([]);
    expect(entries.some((entry) => entry.mountPoint === '/')).toBe(true);
  });
});
