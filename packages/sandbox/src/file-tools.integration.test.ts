// The sandbox's file tools as the student, inside a real sandbox: what the operations added
// for the tool profiles (readText, readBytes, createOnly and compare-and-swap writes, delete,
// deep listing, partial lines, cancellation) can and cannot reach.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { createSandbox, type Sandbox } from './index.js';
import { pidsOfUid } from '../../../test/support/index.js';

const SECRET = `karotte-secret-${process.pid}-${Date.now()}`;
let box: Sandbox;
let visibleDir: string;
let hiddenDir: string;

beforeAll(async () => {
  visibleDir = fs.mkdtempSync('/var/cache/karotte-file-tools-visible-');
  fs.chmodSync(visibleDir, 0o755);
  fs.writeFileSync(path.join(visibleDir, 'root-only.txt'), SECRET, { mode: 0o600 });
  fs.writeFileSync(path.join(visibleDir, 'root-owned.txt'), 'public\n', { mode: 0o644 });
  fs.mkdirSync(path.join(visibleDir, 'closed'), { mode: 0o700 });
  fs.writeFileSync(path.join(visibleDir, 'closed', 'inside.txt'), SECRET);
  hiddenDir = fs.mkdtempSync('/var/cache/karotte-file-tools-hidden-');
  fs.chmodSync(hiddenDir, 0o755);
  fs.writeFileSync(path.join(hiddenDir, 'answer.txt'), SECRET, { mode: 0o644 });
  box = await createSandbox({
    hiddenPaths: [hiddenDir],
    limits: { diskBytes: 32 * MiB, memoryBytes: 256 * MiB, pids: 64 },
  });
}, 120_000);

afterAll(async () => {
  const uid = box?.uid;
  await box?.destroy();
  if (uid !== undefined) expect(pidsOfUid(uid)).toEqual([]);
  fs.rmSync(visibleDir, { recursive: true, force: true });
  fs.rmSync(hiddenDir, { recursive: true, force: true });
});

describe('reads as the student', () => {
  it('readText and readBytes return whole files with their hash, and nothing the student cannot read', async () => {
    await box.exec("printf 'hello\\n' > hello.txt");
    expect(await box.files.readText({ path: 'hello.txt' })).toEqual({
      ok: true,
      content: 'hello\n',
      fileBytes: 6,
      sha256: crypto.createHash('sha256').update('hello\n').digest('hex'),
    });
    expect(await box.files.readBytes({ path: 'hello.txt' })).toMatchObject({
      ok: true,
      dataBase64: Buffer.from('hello\n').toString('base64'),
    });
    for (const target of [`${visibleDir}/root-only.txt`, `${visibleDir}/closed/inside.txt`]) {
      const text = await box.files.readText({ path: target });
      const bytes = await box.files.readBytes({ path: target });
      expect(text).toMatchObject({ ok: false, code: 'EACCES' });
      expect(bytes).toMatchObject({ ok: false, code: 'EACCES' });
      expect(JSON.stringify([text, bytes])).not.toContain(SECRET);
    }
    await box.exec(`ln -s ${hiddenDir}/answer.txt hidden-link`);
    const hidden = await box.files.readText({ path: 'hidden-link' });
    expect(hidden.ok).toBe(false);
    expect(JSON.stringify(hidden)).not.toContain(SECRET);
  });

  it('a giant sparse file is refused by its size, or by what its first bytes are, at once', async () => {
    await box.exec("printf 'text first ' > giant.txt && truncate -s 8G giant.txt");
    const started = performance.now();
    expect(await box.files.readText({ path: 'giant.txt' })).toMatchObject({
      ok: false,
      code: 'FILE_TOO_LARGE',
    });
    expect(await box.files.view({ path: 'giant.txt', partialLine: true, maxBytes: 4096 })).toMatchObject({
      ok: false,
      code: 'NOT_TEXT',
    });
    expect(await box.files.view({ path: 'giant.txt', startLine: 2 })).toMatchObject({
      ok: true,
      content: '',
      totalLines: null,
    });
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});

describe('writes as the student', () => {
  it('createOnly never overwrites, expectedSha256 never overwrites a change, files are the student’s', async () => {
    expect(
      await box.files.write({
        path: 'made/new.txt',
        content: 'one\n',
        createOnly: true,
        createParents: true,
      }),
    ).toEqual({
      ok: true,
      bytes: 4,
    });
    expect(fs.statSync(path.join(box.workDir, 'made/new.txt')).uid).toBe(box.uid);
    expect(await box.files.write({ path: 'made/new.txt', content: 'two\n', createOnly: true })).toMatchObject(
      {
        ok: false,
        code: 'EEXIST',
      },
    );
    const read = await box.files.readText({ path: 'made/new.txt' });
    if (!read.ok) throw new Error(read.message);
    await box.exec('echo changed > made/new.txt');
    expect(
      await box.files.write({ path: 'made/new.txt', content: 'edit\n', expectedSha256: read.sha256 }),
    ).toMatchObject({
      ok: false,
      code: 'CONFLICT',
    });
    expect(fs.readFileSync(path.join(box.workDir, 'made/new.txt'), 'utf8')).toBe('changed\n');
    await expect(
      box.files.write({ path: 'x', content: '', createOnly: true, expectedSha256: read.sha256 }),
    ).rejects.toMatchObject({ field: 'expectedSha256' });
    // Through a link to a root-owned file: refused by the kernel, the file unchanged.
    await box.exec(`ln -s ${visibleDir}/root-owned.txt owned-link`);
    expect(await box.files.write({ path: 'owned-link', content: 'pwned' })).toMatchObject({
      ok: false,
      code: 'EACCES',
    });
    expect(fs.readFileSync(path.join(visibleDir, 'root-owned.txt'), 'utf8')).toBe('public\n');
  });

  it('delete removes the student’s files and links, never a root-owned file or a directory', async () => {
    await box.exec('echo bye > gone.txt; mkdir -p keep');
    expect(await box.files.delete({ path: 'gone.txt' })).toEqual({ ok: true });
    expect(fs.existsSync(path.join(box.workDir, 'gone.txt'))).toBe(false);
    expect(await box.files.delete({ path: 'owned-link' })).toEqual({ ok: true });
    expect(fs.existsSync(path.join(visibleDir, 'root-owned.txt'))).toBe(true);
    // The student's view of the host is read-only as well as root-owned: either refusal will do.
    expect(await box.files.delete({ path: `${visibleDir}/root-owned.txt` })).toMatchObject({
      ok: false,
      code: expect.stringMatching(/^(EACCES|EROFS)$/),
    });
    expect(fs.existsSync(path.join(visibleDir, 'root-owned.txt'))).toBe(true);
    expect(await box.files.delete({ path: 'keep' })).toMatchObject({ ok: false, code: 'EISDIR' });
  });
});

describe('listing, bounds and cancellation', () => {
  it('a deep listing shows a closed directory without its contents', async () => {
    const listed = await box.files.list({ path: visibleDir, depth: 2 });
    expect(listed).toMatchObject({ ok: true, truncated: false });
    const names = listed.ok ? listed.entries.map((entry) => entry.name) : [];
    expect(names).toContain('closed');
    expect(names).not.toContain('closed/inside.txt');
  });

  it('a timed-out or cancelled operation is answered as such and leaves nothing running', async () => {
    expect(await box.files.view({ path: 'hello.txt', timeoutMs: 5 })).toMatchObject({
      ok: false,
      code: 'TIMED_OUT',
    });
    const controller = new AbortController();
    setTimeout(() => {
      controller.abort();
    }, 5);
    expect(await box.files.readText({ path: 'hello.txt', abortSignal: controller.signal })).toMatchObject({
      ok: false,
      code: 'ABORTED',
    });
    // Only the persistent shell (and its own helpers) remain: no file tool program lingers.
    const processes = await box.exec('ps -eo args');
    expect(processes.exitCode).toBe(0);
    expect(processes.stdout).toContain('bash');
    expect(processes.stdout).not.toContain('node -e');
  });
});
