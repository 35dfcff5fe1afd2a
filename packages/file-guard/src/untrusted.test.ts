// Argument handling and in-process reads on files this test owns (no other uid needed).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BadArgumentError } from '@karotte/base';
import { helperStatusSchema } from './helper.js';
import { HELPER_SOURCE } from './helper-source.js';
import { reclaim } from './reclaim.js';
import { listUntrusted, readUntrusted, writeUntrusted } from './untrusted.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('untrusted-path arguments', () => {
  it('rejects relative paths, . and .. components', async () => {
    for (const bad of ['relative', '/a/../etc/passwd', '/a/./b', '']) {
      await expect(readUntrusted(bad), bad).rejects.toBeInstanceOf(BadArgumentError);
    }
    await expect(listUntrusted('x')).rejects.toBeInstanceOf(BadArgumentError);
  });

  it('never follows links as the harness, and never writes without a uid', async () => {
    await expect(readUntrusted('/tmp', { followSymlinks: true })).rejects.toBeInstanceOf(BadArgumentError);
    await expect(writeUntrusted('/tmp/x', 'x', {} as never)).rejects.toBeInstanceOf(BadArgumentError);
  });

  it('reclaim refuses uid 0 and system uids', async () => {
    await expect(reclaim(0, { roots: ['/tmp'] })).rejects.toBeInstanceOf(BadArgumentError);
    await expect(reclaim(100, { roots: ['/tmp'] })).rejects.toBeInstanceOf(BadArgumentError);
    await expect(reclaim(-1, { roots: ['/tmp'] })).rejects.toBeInstanceOf(BadArgumentError);
  });
});

describe('readUntrusted in process', () => {
  it('reads, bounds and refuses links on a file this process owns', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-untrusted-unit-'));
    made.push(dir);
    fs.writeFileSync(path.join(dir, 'f'), 'héllo');
    fs.symlinkSync('f', path.join(dir, 'l'));
    expect(await readUntrusted(path.join(dir, 'f'), { encoding: 'utf8' })).toMatchObject({
      ok: true,
      data: 'héllo',
    });
    // A cut inside a character is dropped from the text, never mangled.
    expect(
      await readUntrusted(path.join(dir, 'f'), { encoding: 'utf8', maxBytes: 2, truncate: true }),
    ).toMatchObject({
      ok: true,
      data: 'h',
      truncated: true,
    });
    expect(await readUntrusted(path.join(dir, 'l'))).toMatchObject({ ok: false, reason: 'SYMLINK' });
  });
});

describe('the helper protocol', () => {
  it('the status schema is strict', () => {
    const ids = { uid: 1, gid: 1, groups: [] };
    expect(helperStatusSchema.safeParse({ ids, ok: true, bytes: 1 }).success).toBe(true);
    expect(helperStatusSchema.safeParse({ ids, ok: true, extra: 1 }).success).toBe(false);
    expect(helperStatusSchema.safeParse({ ids, ok: false, reason: 'OWNED', message: 'x' }).success).toBe(
      false,
    );
  });

  it('the helper program is constant and evaluates nothing from its request', () => {
    expect(HELPER_SOURCE).not.toMatch(/\beval\(|new Function|require\(request|import\(/);
    expect(HELPER_SOURCE).toContain("require('node:fs')");
  });
});
