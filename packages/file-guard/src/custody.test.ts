// takeCustody on files this (unprivileged or not) test process owns: budgets, escaping and
// the manifest, without another uid. The hostile-student cases are in the integration tests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BadArgumentError, SystemError } from '@karotte/base';
import { destinationFailure, linkStaysInside, takeCustody } from './custody.js';
import { custodyManifestSchema } from './manifest.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function dirs(): { root: string; out: string } {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-custody-unit-'));
  made.push(base);
  const root = path.join(base, 'root');
  const out = path.join(base, 'out');
  fs.mkdirSync(root);
  fs.mkdirSync(out);
  return { root, out };
}

describe('takeCustody budgets (unit)', () => {
  it('refuses per-file, entry, depth and name budgets with escaped paths', async () => {
    const { root, out } = dirs();
    fs.writeFileSync(path.join(root, 'big\nname'), Buffer.alloc(2048));
    fs.mkdirSync(path.join(root, 'tree/a/b'), { recursive: true });
    fs.writeFileSync(path.join(root, 'tree/a/b/leaf'), 'x');
    const options = { root, destinationParent: out };
    const big = await takeCustody(['big\nname'], { ...options, maxFileBytes: 1024 });
    expect(big.misbehavior).toEqual([
      { code: 'FILE_TOO_LARGE', message: 'big\\nname is too large (2048 bytes > 1024)', path: 'big\\nname' },
    ]);
    expect((await takeCustody(['tree'], { ...options, maxEntries: 3 })).misbehavior[0]?.code).toBe(
      'TOO_MANY_ENTRIES',
    );
    expect((await takeCustody(['tree'], { ...options, maxDepth: 2 })).misbehavior[0]).toMatchObject({
      code: 'TOO_DEEP',
      path: 'tree/a/b/leaf',
    });
    expect((await takeCustody(['tree'], { ...options, maxPathBytes: 10 })).misbehavior[0]?.code).toBe(
      'NAME_TOO_LONG',
    );
    expect(fs.readdirSync(out)).toEqual([]);
    const ok = await takeCustody(['tree'], { ...options, maxEntries: 4, maxDepth: 3 });
    expect(ok.ok).toBe(true);
    expect(custodyManifestSchema.parse(JSON.parse(JSON.stringify(ok.manifest)))).toEqual(ok.manifest);
    expect(ok.manifest.entries.map((entry) => entry.path)).toEqual([
      'tree',
      'tree/a',
      'tree/a/b',
      'tree/a/b/leaf',
    ]);
  });

  it('a custody past timeoutMs is a host fault, and leaves nothing behind', async () => {
    const { root, out } = dirs();
    // 2,000 files cannot be copied in 1 ms: a checkpoint between files sees the deadline.
    for (let i = 0; i < 2000; i += 1) fs.writeFileSync(path.join(root, `f${i}`), 'x');
    const names = Array.from({ length: 2000 }, (_, i) => `f${i}`);
    await expect(takeCustody(names, { root, destinationParent: out, timeoutMs: 1 })).rejects.toMatchObject({
      code: 'TIMED_OUT',
    });
    expect(fs.readdirSync(out)).toEqual([]);
  });

  it('rejects caller mistakes before touching anything', async () => {
    const { root, out } = dirs();
    await expect(takeCustody(['../escape'], { root, destinationParent: out })).rejects.toBeInstanceOf(
      BadArgumentError,
    );
    await expect(takeCustody(['a'], { root: 'relative', destinationParent: out })).rejects.toBeInstanceOf(
      BadArgumentError,
    );
    await expect(takeCustody(['a', 'a'], { root, destinationParent: out })).rejects.toBeInstanceOf(
      BadArgumentError,
    );
    await expect(
      takeCustody(['a'], { root, destinationParent: `/${'d'.repeat(1100)}`, maxPathBytes: 3072 }),
    ).rejects.toBeInstanceOf(BadArgumentError);
    expect(fs.readdirSync(out)).toEqual([]);
  });
});

describe('linkStaysInside', () => {
  const b = (text: string): Buffer => Buffer.from(text);
  it('allows relative targets that stay inside the declared directory', () => {
    expect(linkStaysInside(b('src'), b('src/pkg/alias'), b('real.txt'))).toBe(true);
    expect(linkStaysInside(b('src'), b('src/pkg/alias'), b('../other/x'))).toBe(true);
    expect(linkStaysInside(b('out/src'), b('out/src/a'), b('./b'))).toBe(true);
  });

  it('refuses absolute targets and climbs above the declared directory', () => {
    expect(linkStaysInside(b('src'), b('src/a'), b('/etc/passwd'))).toBe(false);
    expect(linkStaysInside(b('src'), b('src/a'), b('../x'))).toBe(false);
    expect(linkStaysInside(b('src'), b('src/pkg/a'), b('../../x'))).toBe(false);
    expect(linkStaysInside(b('src'), b('src/pkg/a'), b('x/../../../y'))).toBe(false);
    expect(linkStaysInside(b('src'), b('src/a'), b(''))).toBe(false);
  });
});

describe('destination errors: whose fault', () => {
  const failure = (code: string): Error => Object.assign(new Error(`${code}: at the destination`), { code });

  // ENAMETOOLONG cannot be provoked for real here (source and destination are both local
  // file systems with the same 255-byte name limit, and the copy is made through descriptors,
  // never long paths); ENOSPC is also proven for real in the integration tests.
  it.each(['ENOSPC', 'EDQUOT', 'ENAMETOOLONG', 'EFBIG', 'EMLINK', 'EEXIST'])(
    '%s is something the student can provoke: CANNOT_SAVE misbehavior',
    (code) => {
      const refusal = destinationFailure(failure(code), Buffer.from('out/a\nb'));
      expect(refusal.record).toMatchObject({
        code: 'CANNOT_SAVE',
        message: `out/a\\nb cannot be saved: ${code}`,
      });
    },
  );

  it.each(['EROFS', 'EIO', 'EACCES', 'EBADF'])(
    "%s is the host's fault: a SystemError, never misbehavior",
    (code) => {
      expect(() => destinationFailure(failure(code), Buffer.from('answer.txt'))).toThrow(SystemError);
    },
  );
});
