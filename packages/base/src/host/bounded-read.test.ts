import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readBounded } from './bounded-read.js';

describe('readBounded (real files)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bounded-'));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads a regular file within the bound, and refuses one past it', async () => {
    fs.writeFileSync(path.join(dir, 'f'), 'x'.repeat(100));
    expect(await readBounded(path.join(dir, 'f'), 99)).toMatchObject({
      ok: false,
      refusal: 'too_large',
      size: 100,
    });
    const ok = await readBounded(path.join(dir, 'f'), 100);
    expect(ok.ok && ok.bytes.length).toBe(100);
  });

  it('refuses a 100 MB file without reading it', async () => {
    const file = path.join(dir, 'big');
    const fd = fs.openSync(file, 'w');
    fs.ftruncateSync(fd, 100 * 1024 * 1024);
    fs.closeSync(fd);
    const started = performance.now();
    expect(await readBounded(file, 1024)).toMatchObject({ ok: false, refusal: 'too_large' });
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('reports a missing file, and a missing directory on the way', async () => {
    expect(await readBounded(path.join(dir, 'none'), 10)).toMatchObject({ ok: false, refusal: 'missing' });
    fs.writeFileSync(path.join(dir, 'file'), '');
    expect(await readBounded(path.join(dir, 'file', 'x'), 10)).toMatchObject({
      ok: false,
      refusal: 'missing',
    });
  });

  it('refuses a symlink to a regular file (O_NOFOLLOW)', async () => {
    fs.writeFileSync(path.join(dir, 'real'), '{}');
    fs.symlinkSync(path.join(dir, 'real'), path.join(dir, 'link'));
    expect(await readBounded(path.join(dir, 'link'), 10)).toMatchObject({ ok: false, refusal: 'symlink' });
  });

  it('refuses a FIFO without blocking (O_NONBLOCK), a directory and /dev/zero', async () => {
    const fifo = path.join(dir, 'fifo');
    expect(spawnSync('/usr/bin/mkfifo', [fifo]).status).toBe(0);
    expect(await readBounded(fifo, 10)).toMatchObject({ ok: false, refusal: 'not_regular' });
    fs.mkdirSync(path.join(dir, 'd'));
    expect(await readBounded(path.join(dir, 'd'), 10)).toMatchObject({ ok: false, refusal: 'not_regular' });
    expect(await readBounded('/dev/zero', 10)).toMatchObject({ ok: false, refusal: 'not_regular' });
  });
});
