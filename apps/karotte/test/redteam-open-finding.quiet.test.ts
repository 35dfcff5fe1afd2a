// The proof that the residual page-cache timing channel (the sandbox README's "does not
// protect against") is real: `karotte redteam --only page-cache-timing-carry` carries the
// answer from one episode to the next through the residency of shared host pages, and the
// run says so (exit 1). If a defense ever closes the channel this test fails, and the README
// and `karotte check` must then say it is closed.
//
// The attack looks for regions of large host files under /usr/lib and /usr/share that nobody
// has read. Whether a host still has such regions depends on its history (a long-running test
// machine has read most of them), so the test gives it one, as any host has: a 32 MiB file of
// real blocks, named to sort first, written, synced and dropped from the page cache (GNU dd's
// `oflag=nocache`, read back cold with util-linux's `fincore`) before every try, removed after.
//
// A `*.quiet.test.ts` runs in the `quiet` project, alone and after every other test (see
// vitest.config.ts): the channel reads timing, and the rest of the suite on the same cores is
// noise that can drown one carry. It still gets three tries; one carry is the proof.
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redteam } from './redteam-support.js';

const task = path.resolve(import.meta.dirname, '..', 'examples', 'quarterly-revenue');
const medium = `/usr/lib/0karotte-page-cache-medium-${process.pid}.bin`;

/** Drop the medium from the page cache and prove it: no page of it resident. */
function makeCold(): void {
  const drop = spawnSync(
    '/usr/bin/dd',
    ['if=/dev/null', `of=${medium}`, 'oflag=nocache', 'conv=notrunc,fdatasync', 'count=0'],
    { encoding: 'utf8' },
  );
  expect(drop.status, drop.stderr).toBe(0);
  const resident = spawnSync('/usr/bin/fincore', ['--bytes', '--noheadings', '--output', 'RES', medium], {
    encoding: 'utf8',
  });
  expect(resident.status, resident.stderr).toBe(0);
  expect(resident.stdout.trim()).toBe('0');
}

beforeAll(() => {
  const fd = fs.openSync(medium, 'wx', 0o644);
  try {
    for (let i = 0; i < 32; i += 1) fs.writeSync(fd, randomBytes(1024 * 1024));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
});
afterAll(() => {
  fs.rmSync(medium, { force: true });
});

describe('karotte redteam, an open finding', () => {
  it('runs when --only names it: the page-cache timing channel still carries the answer (the residual is real)', () => {
    let r: ReturnType<typeof redteam> | undefined;
    let row: ReturnType<typeof redteam>['rows'][number] | undefined;
    for (let attempt = 0; attempt < 3 && row?.score !== 1; attempt += 1) {
      makeCold();
      r = redteam(task, ['--only', 'page-cache-timing-carry']);
      row = r.rows.find((candidate) => candidate.id === 'page-cache-timing-carry');
    }
    expect(row?.status).not.toBe('skipped');
    expect(row?.status).not.toBe('error');
    expect(row?.seed).toEqual({ status: 'passed', score: 1 });
    // It scores: the channel is open, so the run says so (exit 1).
    expect(row).toMatchObject({ score: 1, ok: false });
    expect(r?.status).toBe(1);
  }, 300_000);
});
