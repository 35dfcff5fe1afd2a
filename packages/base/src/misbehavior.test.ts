import { describe, expect, it } from 'vitest';
import {
  MISBEHAVIOR_CODES,
  createMisbehavior,
  escapeForDisplay,
  isMisbehaviorCode,
  misbehaviorRecordSchema,
} from './misbehavior.js';

describe('escapeForDisplay', () => {
  it('keeps ordinary names', () => {
    expect(escapeForDisplay('answer.txt')).toBe('answer.txt');
    expect(escapeForDisplay('données-é.csv')).toBe('données-é.csv');
  });

  it('escapes newlines, controls, backslashes and bidi overrides', () => {
    expect(escapeForDisplay('a\nb\tc\\d')).toBe('a\\nb\\tc\\\\d');
    expect(escapeForDisplay('x\u0000y\u001bz')).toBe('x\\u{0}y\\u{1b}z');
    expect(escapeForDisplay('evil\u202etxt.exe')).toBe('evil\\u{202e}txt.exe');
  });

  it('hex-escapes invalid UTF-8 bytes and keeps valid runs around them', () => {
    const bytes = Buffer.concat([Buffer.from('bad'), Buffer.from([0xff, 0xfe]), Buffer.from('link-é')]);
    expect(escapeForDisplay(bytes)).toBe('bad\\xff\\xfelink-é');
    expect(escapeForDisplay(Buffer.from([0xc0, 0x80]))).toBe('\\xc0\\x80'); // overlong NUL
    expect(escapeForDisplay(Buffer.from([0xed, 0xa0, 0x80]))).toBe('\\xed\\xa0\\x80'); // surrogate
  });

  it('output is one printable line that survives JSON', () => {
    const hostile = Buffer.from([0x2d, 0x2d, 0x0a, 0x80, 0x22, 0x7f]);
    const out = escapeForDisplay(hostile);
    expect(out).not.toMatch(/[\n\r\u0000-\u001f\u007f]/);
    expect(JSON.parse(JSON.stringify({ out }))).toEqual({ out });
  });

  it('caps the length', () => {
    const out = escapeForDisplay('a'.repeat(5000), 100);
    expect(out.length).toBeLessThan(120);
    expect(out).toMatch(/more\]$/);
  });
});

describe('misbehavior records', () => {
  it('creates records that validate against the schema', () => {
    const record = createMisbehavior('SYMLINK', 'answer.txt is a symbolic link', 'answer\n.txt');
    expect(record).toEqual({
      code: 'SYMLINK',
      message: 'answer.txt is a symbolic link',
      path: 'answer\\n.txt',
    });
    expect(misbehaviorRecordSchema.parse(record)).toEqual(record);
    expect(() => misbehaviorRecordSchema.parse({ ...record, extra: 1 })).toThrow();
  });

  it('codes are unique SCREAMING_SNAKE strings', () => {
    expect(new Set(MISBEHAVIOR_CODES).size).toBe(MISBEHAVIOR_CODES.length);
    for (const code of MISBEHAVIOR_CODES) expect(code).toMatch(/^[A-Z][A-Z0-9_]*$/);
    expect(isMisbehaviorCode('UNREAPABLE')).toBe(true);
    expect(isMisbehaviorCode('unreapable')).toBe(false);
  });
});
