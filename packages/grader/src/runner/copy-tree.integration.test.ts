// The grader's copy of a custody tree on real file systems (ext4 and tmpfs): holes stay holes,
// and the copy is bounded by what it allocates, never by apparent sizes. Real sparse files:
// a 10 GiB file with three data blocks takes 12 KiB of the source's disk and must take about
// that in the copy. Every destination is bounded (a 256 MiB tmpfs, or a 64 MiB file on ext4),
// so a copy that writes holes dense fails here without filling the host's disk.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GiB, KiB, MiB } from '@karotte/base';
import { tempDir, tmpfsDir } from '../../../../test/support/index.js';
import { copyTree } from './copy-tree.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

const owner = { uid: 0, gid: 0, dirMode: 0o700, fileMode: 0o600, maxEntries: 100 };

/** A 4 KiB block of recognisable data for `offset`. */
function block(offset: number): Buffer {
  return Buffer.from(`karotte data at ${offset}\n`.padEnd(4 * KiB, '.'));
}

/** A sparse file of `size` bytes holding {@link block}s at `offsets` (everything else a hole). */
function sparseFile(file: string, size: number, offsets: readonly number[]): void {
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    fs.ftruncateSync(fd, size);
    for (const offset of offsets) fs.writeSync(fd, block(offset), 0, 4 * KiB, offset);
  } finally {
    fs.closeSync(fd);
  }
}

/** Bytes a file allocates on its file system (st_blocks is in 512-byte units). */
function allocated(file: string): number {
  return fs.statSync(file).blocks * 512;
}

function readAt(file: string, offset: number, length: number): Buffer {
  const fd = fs.openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const n = fs.readSync(fd, buffer, 0, length, offset);
    return buffer.subarray(0, n);
  } finally {
    fs.closeSync(fd);
  }
}

const GIANT_SIZE = 10 * GiB;
const GIANT_OFFSETS = [0, 5 * GiB, GIANT_SIZE - 4 * KiB];

/** A custody-like tree: a 10 GiB sparse file, a 64 MiB sparse file below a directory, a dense file. */
function sourceTree(): string {
  const source = tempDir('grader-sparse-src');
  cleanups.push(source.cleanup);
  sparseFile(path.join(source.dir, 'giant.bin'), GIANT_SIZE, GIANT_OFFSETS);
  fs.mkdirSync(path.join(source.dir, 'sub'));
  sparseFile(path.join(source.dir, 'sub', 'mid.bin'), 64 * MiB, [32 * MiB]);
  fs.writeFileSync(path.join(source.dir, 'dense.txt'), 'dense\n'.repeat(1000));
  return source.dir;
}

describe('copyTree keeps holes', () => {
  it('a 10 GiB file with three data blocks stays a few KiB in the copy (tmpfs, 256 MiB)', async () => {
    const source = sourceTree();
    // The source really is sparse: 10 GiB apparent, a few KiB allocated.
    expect(fs.statSync(path.join(source, 'giant.bin')).size).toBe(GIANT_SIZE);
    expect(allocated(path.join(source, 'giant.bin'))).toBeLessThan(64 * KiB);
    const target = tmpfsDir('grader-sparse-dst', 'size=256m,mode=0700');
    cleanups.push(target.cleanup);
    const destination = path.join(target.dir, 'copy');

    const started = performance.now();
    const copied = await copyTree(source, destination, owner);
    const elapsedMs = performance.now() - started;

    expect(copied).toMatchObject({ ok: true, entries: 4 });
    const giant = path.join(destination, 'giant.bin');
    expect(fs.statSync(giant).size).toBe(GIANT_SIZE);
    // Close to the source's allocation: a dense copy would need 10 GiB (and fail here at 256 MiB).
    expect(allocated(giant)).toBeLessThanOrEqual(allocated(path.join(source, 'giant.bin')) + 64 * KiB);
    for (const offset of GIANT_OFFSETS) expect(readAt(giant, offset, 4 * KiB)).toEqual(block(offset));
    expect(readAt(giant, 3 * GiB, 4 * KiB)).toEqual(Buffer.alloc(4 * KiB));
    const mid = path.join(destination, 'sub', 'mid.bin');
    expect(fs.statSync(mid).size).toBe(64 * MiB);
    expect(allocated(mid)).toBeLessThanOrEqual(64 * KiB);
    expect(readAt(mid, 32 * MiB, 4 * KiB)).toEqual(block(32 * MiB));
    expect(fs.readFileSync(path.join(destination, 'dense.txt'), 'utf8')).toBe('dense\n'.repeat(1000));
    // Owner and modes as asked, on every copy.
    expect(fs.statSync(giant).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(destination, 'sub')).mode & 0o777).toBe(0o700);
    // The work follows the data, not the apparent size: reading 10 GiB of holes takes seconds.
    expect(elapsedMs).toBeLessThan(5000);
    if (copied.ok) expect(copied.allocatedBytes).toBeLessThan(256 * KiB);
  });

  it('on ext4 the copy allocates what the source does, not its apparent size', async () => {
    const source = tempDir('grader-sparse-src');
    cleanups.push(source.cleanup);
    sparseFile(path.join(source.dir, 'mid.bin'), 64 * MiB, [0, 40 * MiB]);
    const target = tempDir('grader-sparse-dst');
    cleanups.push(target.cleanup);
    const destination = path.join(target.dir, 'copy');

    const copied = await copyTree(source.dir, destination, owner);

    expect(copied.ok).toBe(true);
    const copy = path.join(destination, 'mid.bin');
    expect(fs.statSync(copy).size).toBe(64 * MiB);
    expect(allocated(copy)).toBeLessThanOrEqual(allocated(path.join(source.dir, 'mid.bin')) + 64 * KiB);
    expect(readAt(copy, 40 * MiB, 4 * KiB)).toEqual(block(40 * MiB));
  });
});

describe('copyTree copies sparse files under any name', () => {
  it('a sparse file whose name is not UTF-8 (with a newline and a leading dash) keeps name and holes', async () => {
    const source = tempDir('grader-sparse-src');
    cleanups.push(source.cleanup);
    const name = Buffer.from([0x2d, 0x66, 0xff, 0x0a, 0x62]); // "-f\xff\nb"
    const sourceFile = Buffer.concat([Buffer.from(`${source.dir}/`), name]);
    const fd = fs.openSync(sourceFile, 'wx', 0o600);
    fs.ftruncateSync(fd, 512 * MiB);
    fs.writeSync(fd, block(7 * MiB), 0, 4 * KiB, 7 * MiB);
    fs.closeSync(fd);
    const target = tmpfsDir('grader-sparse-dst', 'size=64m,mode=0700');
    cleanups.push(target.cleanup);
    const destination = path.join(target.dir, 'copy');

    expect(await copyTree(source.dir, destination, owner)).toMatchObject({ ok: true, entries: 1 });

    const names = fs.readdirSync(destination, { encoding: 'buffer' });
    expect(names).toEqual([name]);
    const copy = Buffer.concat([Buffer.from(`${destination}/`), name]);
    expect(fs.statSync(copy).size).toBe(512 * MiB);
    expect(fs.statSync(copy).blocks * 512).toBeLessThanOrEqual(64 * KiB);
    const check = fs.openSync(copy, 'r');
    const data = Buffer.alloc(4 * KiB);
    fs.readSync(check, data, 0, 4 * KiB, 7 * MiB);
    fs.closeSync(check);
    expect(data).toEqual(block(7 * MiB));
  });
});

describe('copyTree is bounded by allocated bytes', () => {
  it('a 10 GiB sparse file fits a 1 MiB allocation budget (its apparent size is not the measure)', async () => {
    const source = sourceTree();
    const target = tmpfsDir('grader-sparse-dst', 'size=256m,mode=0700');
    cleanups.push(target.cleanup);
    const copied = await copyTree(source, path.join(target.dir, 'copy'), {
      ...owner,
      maxAllocatedBytes: MiB,
    });
    expect(copied).toMatchObject({ ok: true, entries: 4 });
  });

  it('a tree allocating more than the budget is refused before the copy passes it', async () => {
    const source = tempDir('grader-dense-src');
    cleanups.push(source.cleanup);
    for (const name of ['a.bin', 'b.bin', 'c.bin']) {
      fs.writeFileSync(path.join(source.dir, name), Buffer.alloc(MiB, 1));
    }
    const target = tempDir('grader-dense-dst');
    cleanups.push(target.cleanup);
    const destination = path.join(target.dir, 'copy');
    const copied = await copyTree(source.dir, destination, {
      ...owner,
      maxAllocatedBytes: 2 * MiB + 512 * KiB,
    });
    expect(copied).toEqual({
      ok: false,
      message: expect.stringContaining('more than 2621440 bytes') as unknown,
    });
    // Two of the three files were copied at most: the third would have passed the budget.
    const written = fs
      .readdirSync(destination)
      .reduce((sum, name) => sum + allocated(path.join(destination, name)), 0);
    expect(written).toBeLessThanOrEqual(2 * MiB + 512 * KiB);
  });

  it('refuses a budget that is not a non-negative integer', async () => {
    const source = tempDir('grader-dense-src');
    cleanups.push(source.cleanup);
    const target = tempDir('grader-dense-dst');
    cleanups.push(target.cleanup);
    await expect(
      copyTree(source.dir, path.join(target.dir, 'copy'), { ...owner, maxAllocatedBytes: -1 }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', field: 'maxAllocatedBytes' });
  });
});
