import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SystemError } from '../errors.js';
import { hasSubordinateConflict, parseSubordinateIds, readAccountIds, readSubordinateIds } from './ids.js';

describe('host id databases (fixture files)', () => {
  let dir: string;
  const write = (name: string, text: string): string => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  };
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-ids-'));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('readAccountIds: every uid of passwd and gid of group, digits only', async () => {
    const passwd = write(
      'passwd',
      'root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n# comment\n+::::::\nodd::\n\n',
    );
    const group = write('group', 'wheel:x:10:alice\nstaff:x:2000000005:\nbad:x:-3:\n');
    expect([...(await readAccountIds([passwd, group]))].sort((a, b) => a - b)).toEqual([
      0, 10, 1000, 2000000005,
    ]);
  });

  it('a missing database is empty; one that cannot be read throws (fail closed)', async () => {
    expect((await readAccountIds([path.join(dir, 'none'), path.join(dir, 'no', 'dir')])).size).toBe(0);
    fs.mkdirSync(path.join(dir, 'passwd'));
    await expect(readAccountIds([path.join(dir, 'passwd')])).rejects.toSatisfy(
      (error: unknown) => SystemError.isInstance(error) && error.errno === 'EISDIR',
    );
    await expect(readSubordinateIds([path.join(dir, 'passwd')])).rejects.toSatisfy((error: unknown) =>
      SystemError.isInstance(error),
    );
  });

  it('parseSubordinateIds: owner:start:count lines; comments, junk and empty ranges skipped', () => {
    expect(
      parseSubordinateIds('alice:100000:65536\n# c\n  2000000000:1:1 \nbroken\nbob:x:5\nzero:5:0\n:1:2\n'),
    ).toEqual([
      { owner: 'alice', start: 100000, count: 65536 },
      { owner: '2000000000', start: 1, count: 1 },
    ]);
  });

  it('readSubordinateIds reads every file in order', async () => {
    const subuid = write('subuid', 'alice:100000:65536\n');
    const subgid = write('subgid', 'containers:2147483647:2147483648\n');
    expect(await readSubordinateIds([subuid, path.join(dir, 'missing'), subgid])).toEqual([
      { owner: 'alice', start: 100000, count: 65536 },
      { owner: 'containers', start: 2147483647, count: 2147483648 },
    ]);
  });

  it('hasSubordinateConflict: a uid that owns a range, or lies in one (both ends), conflicts', () => {
    const ranges = parseSubordinateIds('alice:100000:10\n2000000001:5:1\n');
    expect(hasSubordinateConflict(100000, ranges)).toBe(true);
    expect(hasSubordinateConflict(100009, ranges)).toBe(true);
    expect(hasSubordinateConflict(100010, ranges)).toBe(false);
    expect(hasSubordinateConflict(99999, ranges)).toBe(false);
    expect(hasSubordinateConflict(2000000001, ranges)).toBe(true);
    expect(hasSubordinateConflict(2000000002, ranges)).toBe(false);
  });
});
