import { describe, expect, it } from 'vitest';
import { ARCHIVE_MIME_TYPES, TextCheck, detectType, policyViolation } from './file-types.js';

function textOf(chunks: Buffer[]): boolean {
  const check = new TextCheck();
  for (const chunk of chunks) check.update(chunk);
  return check.finish();
}

/** Every way of cutting `bytes` in two. */
function splits(bytes: Buffer): Buffer[][] {
  const out: Buffer[][] = [];
  for (let cut = 0; cut <= bytes.length; cut += 1) out.push([bytes.subarray(0, cut), bytes.subarray(cut)]);
  return out;
}

describe('TextCheck (streaming valid UTF-8 without NUL)', () => {
  it('accepts UTF-8 text cut anywhere, even inside a character', () => {
    const text = Buffer.from('ascii, é, €, 𝄞 and 漢字\n');
    for (const chunks of splits(text)) expect(textOf(chunks)).toBe(true);
    // One byte at a time.
    expect(textOf([...text].map((byte) => Buffer.from([byte])))).toBe(true);
    expect(textOf([])).toBe(true);
  });

  it('refuses NUL, invalid bytes, overlongs, surrogates and a truncated last character', () => {
    for (const bad of [
      Buffer.from('a\0b'),
      Buffer.from([0x61, 0xff, 0x62]),
      Buffer.from([0xc0, 0x80]),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from([0xe2, 0x82]),
      Buffer.from([0x80]),
    ]) {
      for (const chunks of splits(bad)) expect(textOf(chunks), bad.toString('hex')).toBe(false);
    }
  });
});

describe('detectType', () => {
  const PNG = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
    'base64',
  );

  it('detects by magic number, and falls back to text or octet-stream', async () => {
    expect(await detectType(PNG, false)).toEqual({ mime: 'image/png', ext: 'png', text: false });
    expect(await detectType(Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3]), false)).toMatchObject({
      mime: 'application/gzip',
    });
    expect(await detectType(Buffer.from('print(1)\n'), true)).toEqual({
      mime: 'text/plain',
      ext: null,
      text: true,
    });
    expect(await detectType(Buffer.from([1, 2, 3]), false)).toEqual({
      mime: 'application/octet-stream',
      ext: null,
      text: false,
    });
    expect(await detectType(Buffer.alloc(0), true)).toEqual({ mime: 'text/plain', ext: null, text: true });
  });
});

describe('policyViolation', () => {
  const png = { mime: 'image/png', ext: 'png', text: false };
  const zip = { mime: 'application/zip', ext: 'zip', text: false };
  const text = { mime: 'text/plain', ext: null, text: true };

  it('allows what matches an allow selector and nothing denied', () => {
    expect(policyViolation(undefined, zip)).toBeUndefined();
    expect(policyViolation({ allow: ['image/png'] }, png)).toBeUndefined();
    expect(policyViolation({ allow: ['image/*'] }, png)).toBeUndefined();
    expect(policyViolation({ allow: ['text'] }, text)).toBeUndefined();
    expect(policyViolation({ deny: ['archive'] }, text)).toBeUndefined();
  });

  it('explains what breaks the rule', () => {
    expect(policyViolation({ allow: ['text'] }, zip)).toBe('is application/zip; the task allows only text');
    expect(policyViolation({ deny: ['archive'] }, zip)).toBe('is application/zip; the task forbids archive');
    expect(policyViolation({ allow: ['image/*'] }, text)).toBe(
      'is text/plain, text; the task allows only image/*',
    );
    expect(policyViolation({ allow: ['text', 'image/png'], deny: ['image/png'] }, png)).toBe(
      'is image/png; the task forbids image/png',
    );
  });

  it('counts the usual containers as archives', () => {
    for (const mime of [
      'application/zip',
      'application/x-tar',
      'application/gzip',
      'application/x-7z-compressed',
    ]) {
      expect(ARCHIVE_MIME_TYPES).toContain(mime);
    }
  });
});
