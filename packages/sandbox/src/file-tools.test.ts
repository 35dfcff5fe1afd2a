// The file tools' program (programs/file-tool.cjs) run directly by this Node.js on files in a
// temporary directory: its operations, caps and refusals. Here it runs as whoever runs the
// tests; file-tools.integration.test.ts runs it as the student inside a real sandbox, where
// the rights are what the student has.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveTrustedBinary } from '@karotte/base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fileToolScript from './programs/file-tool.cjs?raw';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-file-tool-'));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Run one request; the program's JSON answer and how long it took. */
function run(request: Record<string, unknown>): { answer: Record<string, unknown>; ms: number } {
  const started = performance.now();
  const result = spawnSync(process.execPath, ['-e', fileToolScript], {
    input: JSON.stringify(request),
    cwd: dir,
    encoding: 'utf8',
    timeout: 20_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  expect(result.error).toBeUndefined();
  expect(result.stderr).toBe('');
  return { answer: JSON.parse(result.stdout) as Record<string, unknown>, ms: performance.now() - started };
}
const ask = (request: Record<string, unknown>): Record<string, unknown> => run(request).answer;
const view = (p: string, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ask({
    op: 'view',
    path: p,
    startLine: 1,
    endLine: 1000,
    maxBytes: 256 * 1024,
    scanBytes: 64 << 20,
    ...extra,
  });
const sha = (text: string | Buffer): string => crypto.createHash('sha256').update(text).digest('hex');

function file(name: string, content: string | Buffer): string {
  fs.writeFileSync(path.join(dir, name), content);
  return name;
}

describe('view', () => {
  it('shows a line range with the file line count', () => {
    file('ten.txt', Array.from({ length: 10 }, (_, i) => `line ${i + 1}\n`).join(''));
    expect(view('ten.txt', { startLine: 3, endLine: 4 })).toEqual({
      ok: true,
      op: 'view',
      content: 'line 3\nline 4\n',
      startLine: 3,
      endLine: 4,
      totalLines: 10,
      truncated: false,
      fileBytes: 71,
    });
    // A last line without a newline is a line; a start past the end shows nothing.
    file('tail.txt', 'a\nb');
    expect(view('tail.txt')).toMatchObject({ content: 'a\nb', endLine: 2, totalLines: 2 });
    expect(view('tail.txt', { startLine: 5, endLine: 9 })).toMatchObject({
      content: '',
      endLine: 4,
      totalLines: 2,
    });
  });

  it('keeps whole lines under maxBytes, or the head of the line that does not fit (cut at a character)', () => {
    file('three.txt', 'line 1\nline 2\nline 3\n');
    expect(view('three.txt', { maxBytes: 10 })).toMatchObject({
      content: 'line 1\n',
      endLine: 1,
      truncated: true,
    });
    expect(view('three.txt', { maxBytes: 10, partialLine: true })).toMatchObject({
      content: 'line 1\nlin',
      endLine: 2,
      truncated: true,
    });
    // 'é' is two bytes: a cut after 5 bytes keeps two characters, never half of one.
    file('accents.txt', 'éééééé');
    expect(view('accents.txt', { maxBytes: 5, partialLine: true })).toMatchObject({
      content: 'éé',
      truncated: true,
    });
  });

  it('shows the head of a 3 MiB single-line file at once', () => {
    file('one-line.txt', 'x'.repeat(3 * 1024 * 1024));
    const { answer, ms } = run({
      op: 'view',
      path: 'one-line.txt',
      startLine: 1,
      endLine: 1000,
      maxBytes: 384 * 1024,
      partialLine: true,
      scanBytes: 64 << 20,
    });
    expect(answer).toMatchObject({ ok: true, truncated: true, endLine: 1, totalLines: null });
    expect((answer['content'] as string).length).toBe(384 * 1024);
    expect(ms).toBeLessThan(5000);
  });

  it('stops at scanBytes in a sparse 8 GiB file instead of reading it to the end', () => {
    const sparse = path.join(dir, 'sparse.bin');
    fs.writeFileSync(sparse, '');
    fs.truncateSync(sparse, 8 * 1024 ** 3);
    // Line 1 (8 GiB of NUL bytes) is not text; line 2 is past the first 64 MiB.
    const first = run({
      op: 'view',
      path: 'sparse.bin',
      startLine: 1,
      endLine: 10,
      maxBytes: 4096,
      partialLine: true,
      scanBytes: 64 << 20,
    });
    expect(first.answer).toMatchObject({ ok: false, code: 'NOT_TEXT' });
    const second = run({
      op: 'view',
      path: 'sparse.bin',
      startLine: 2,
      endLine: 10,
      maxBytes: 4096,
      scanBytes: 64 << 20,
    });
    expect(second.answer).toMatchObject({ ok: true, content: '', totalLines: null });
    expect(first.ms + second.ms).toBeLessThan(10_000);
    expect(ask({ op: 'read', path: 'sparse.bin', maxBytes: 10 << 20, encoding: 'utf8' })).toMatchObject({
      ok: false,
      code: 'FILE_TOO_LARGE',
      message: expect.stringContaining('8589934592 bytes'),
    });
  });

  it('refuses invalid UTF-8 and NUL bytes', () => {
    file('latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    expect(view('latin1.txt')).toMatchObject({
      ok: false,
      code: 'NOT_TEXT',
      message: 'latin1.txt is not UTF-8 text',
    });
    file('nul.txt', Buffer.from('a\0b\n'));
    expect(view('nul.txt')).toMatchObject({ ok: false, code: 'NOT_TEXT' });
  });
});

describe('what is not a regular file is refused without blocking', () => {
  it('a FIFO (read and write), /dev/zero and a directory', () => {
    const mkfifo = spawnSync(resolveTrustedBinary('mkfifo'), [path.join(dir, 'pipe')]);
    expect(mkfifo.status).toBe(0);
    const timed = run({ op: 'view', path: 'pipe', startLine: 1, endLine: 10, maxBytes: 100, scanBytes: 100 });
    expect(timed.answer).toMatchObject({ ok: false, code: 'NOT_REGULAR_FILE' });
    expect(timed.ms).toBeLessThan(5000);
    expect(ask({ op: 'read', path: 'pipe', maxBytes: 100, encoding: 'utf8' })).toMatchObject({
      code: 'NOT_REGULAR_FILE',
    });
    // No reader: a non-blocking open for writing fails at once (ENXIO) instead of waiting for one.
    expect(
      ask({ op: 'write', path: 'pipe', content: 'x', createParents: false, createOnly: false }),
    ).toMatchObject({
      ok: false,
      code: 'ENXIO',
    });
    expect(ask({ op: 'read', path: '/dev/zero', maxBytes: 100, encoding: 'base64' })).toMatchObject({
      code: 'NOT_REGULAR_FILE',
    });
    fs.mkdirSync(path.join(dir, 'a-dir'), { recursive: true });
    expect(view('a-dir')).toMatchObject({ ok: false, code: 'EISDIR' });
    expect(
      ask({ op: 'write', path: 'a-dir', content: 'x', createParents: false, createOnly: false }),
    ).toMatchObject({
      ok: false,
      code: 'EISDIR',
    });
  });
});

describe('read', () => {
  it('reads text and bytes whole with their SHA-256, and refuses what is over the cap', () => {
    file('r.txt', 'hello\n');
    expect(ask({ op: 'read', path: 'r.txt', maxBytes: 6, encoding: 'utf8' })).toEqual({
      ok: true,
      op: 'read',
      content: 'hello\n',
      fileBytes: 6,
      sha256: sha('hello\n'),
    });
    expect(ask({ op: 'read', path: 'r.txt', maxBytes: 5, encoding: 'utf8' })).toMatchObject({
      ok: false,
      code: 'FILE_TOO_LARGE',
    });
    const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]);
    file('b.bin', bytes);
    expect(ask({ op: 'read', path: 'b.bin', maxBytes: 100, encoding: 'base64' })).toEqual({
      ok: true,
      op: 'read',
      dataBase64: bytes.toString('base64'),
      fileBytes: 8,
      sha256: sha(bytes),
    });
  });
});

describe('write', () => {
  it('createOnly refuses anything at the path, a dangling link included', () => {
    file('exists.txt', 'old');
    expect(
      ask({ op: 'write', path: 'exists.txt', content: 'new', createParents: false, createOnly: true }),
    ).toMatchObject({ ok: false, code: 'EEXIST' });
    expect(fs.readFileSync(path.join(dir, 'exists.txt'), 'utf8')).toBe('old');
    fs.symlinkSync(path.join(dir, 'nowhere', 'target.txt'), path.join(dir, 'dangling'));
    expect(
      ask({ op: 'write', path: 'dangling', content: 'x', createParents: false, createOnly: true }),
    ).toMatchObject({ ok: false, code: 'EEXIST' });
    expect(fs.existsSync(path.join(dir, 'nowhere'))).toBe(false);
    expect(
      ask({ op: 'write', path: 'new/deep/file.txt', content: 'made', createParents: true, createOnly: true }),
    ).toEqual({ ok: true, op: 'write', bytes: 4 });
    expect(fs.readFileSync(path.join(dir, 'new/deep/file.txt'), 'utf8')).toBe('made');
  });

  it('expectedSha256 writes only over the content that was read', () => {
    file('cas.txt', 'one\n');
    const request = {
      op: 'write',
      path: 'cas.txt',
      createParents: false,
      createOnly: false,
      compareBytes: 1 << 20,
    };
    expect(ask({ ...request, content: 'two\n', expectedSha256: sha('one\n') })).toMatchObject({ ok: true });
    expect(ask({ ...request, content: 'three\n', expectedSha256: sha('one\n') })).toMatchObject({
      ok: false,
      code: 'CONFLICT',
    });
    expect(fs.readFileSync(path.join(dir, 'cas.txt'), 'utf8')).toBe('two\n');
    // The file must exist: a compare-and-swap never creates.
    expect(ask({ ...request, path: 'missing.txt', content: 'x', expectedSha256: sha('') })).toMatchObject({
      ok: false,
      code: 'ENOENT',
    });
  });
});

describe('delete and list', () => {
  it('delete removes a file or a link (never its target) and refuses a directory', () => {
    file('target.txt', 'kept');
    fs.symlinkSync('target.txt', path.join(dir, 'to-target'));
    expect(ask({ op: 'delete', path: 'to-target' })).toEqual({ ok: true, op: 'delete' });
    expect(fs.readFileSync(path.join(dir, 'target.txt'), 'utf8')).toBe('kept');
    expect(ask({ op: 'delete', path: 'target.txt' })).toEqual({ ok: true, op: 'delete' });
    expect(fs.existsSync(path.join(dir, 'target.txt'))).toBe(false);
    fs.mkdirSync(path.join(dir, 'keep-dir'));
    expect(ask({ op: 'delete', path: 'keep-dir' })).toMatchObject({ ok: false, code: 'EISDIR' });
    expect(ask({ op: 'delete', path: 'no-such-file' })).toMatchObject({ ok: false, code: 'ENOENT' });
  });

  it('list goes as deep as asked, skips hidden names on request and never follows a link', () => {
    const root = path.join(dir, 'tree');
    fs.mkdirSync(path.join(root, 'sub', 'deeper'), { recursive: true });
    fs.writeFileSync(path.join(root, 'a.txt'), 'a');
    fs.writeFileSync(path.join(root, '.hidden'), 'h');
    fs.writeFileSync(path.join(root, 'sub', 'b.txt'), 'bb');
    fs.writeFileSync(path.join(root, 'sub', 'deeper', 'c.txt'), 'c');
    fs.symlinkSync(path.join(root, 'sub'), path.join(root, 'link-to-sub'));
    const listed = ask({ op: 'list', path: 'tree', maxEntries: 100, depth: 2, includeHidden: false });
    expect(listed).toEqual({
      ok: true,
      op: 'list',
      entries: [
        { name: 'a.txt', type: 'file', size: 1 },
        { name: 'link-to-sub', type: 'symlink', size: expect.any(Number) },
        { name: 'sub', type: 'directory', size: expect.any(Number) },
        { name: 'sub/b.txt', type: 'file', size: 2 },
        { name: 'sub/deeper', type: 'directory', size: expect.any(Number) },
      ],
      truncated: false,
    });
    expect(ask({ op: 'list', path: 'tree', maxEntries: 2, depth: 1, includeHidden: true })).toMatchObject({
      truncated: true,
      entries: [expect.anything(), expect.anything()],
    });
  });

  it('an unknown op is refused', () => {
    expect(ask({ op: 'chmod', path: 'x' })).toEqual({ ok: false, code: 'INVALID', message: 'unknown op' });
  });
});
