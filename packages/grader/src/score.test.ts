import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { maxScoreFileBytes, parseScoreBytes, readScoreFile } from './score.js';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

describe('parseScoreBytes', () => {
  it('accepts a finite score in [0,1] with optional metadata', () => {
    expect(parseScoreBytes(bytes('{"score": 1}'))).toEqual({ ok: true, score: 1, metadata: {} });
    expect(parseScoreBytes(bytes('{"score": 0.25, "metadata": {"k": [1, "v"]}}'))).toEqual({
      ok: true,
      score: 0.25,
      metadata: { k: [1, 'v'] },
    });
    expect(parseScoreBytes(bytes('{"score": -0}'))).toEqual({ ok: true, score: 0, metadata: {} });
  });

  it.each([
    ['NaN', '{"score": NaN}', 'SCORE_NOT_JSON'],
    ['1e309', '{"score": 1e309}', 'SCORE_NOT_JSON'],
    ['a string "1"', '{"score": "1"}', 'SCORE_INVALID'],
    ['above 1', '{"score": 1.0000001}', 'SCORE_INVALID'],
    ['negative', '{"score": -0.5}', 'SCORE_INVALID'],
    ['null', '{"score": null}', 'SCORE_INVALID'],
    ['missing score', '{"metadata": {}}', 'SCORE_INVALID'],
    ['an unknown key', '{"score": 1, "bonus": 1}', 'SCORE_INVALID'],
    ['metadata not an object', '{"score": 1, "metadata": [1]}', 'SCORE_INVALID'],
    ['a bare number', '1', 'SCORE_INVALID'],
    ['duplicate score keys', '{"score": 0, "score": 1}', 'SCORE_NOT_JSON'],
    ['empty file', '', 'SCORE_NOT_JSON'],
    ['deep nesting', `{"score": 1, "metadata": ${'{"a":'.repeat(9)}1${'}'.repeat(9)}}`, 'METADATA_TOO_DEEP'],
    [
      'very deep nesting',
      `{"score": 1, "metadata": {"a": ${'['.repeat(30_000)}${']'.repeat(30_000)}}}`,
      'METADATA_TOO_DEEP',
    ],
  ])('refuses %s', (_, text, reason) => {
    const result = parseScoreBytes(bytes(text));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toBe(reason);
  });

  it('accepts metadata nested exactly to the bound', () => {
    const text = `{"score": 1, "metadata": ${'{"a":'.repeat(7)}1${'}'.repeat(7)}}`;
    expect(parseScoreBytes(bytes(text)).ok).toBe(true);
  });

  it('refuses invalid UTF-8', () => {
    const result = parseScoreBytes(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]));
    expect(result).toMatchObject({ ok: false, reason: 'SCORE_NOT_UTF8' });
  });

  it('refuses metadata over the byte bound', () => {
    const big = JSON.stringify({ score: 1, metadata: { s: 'x'.repeat(70_000) } });
    expect(parseScoreBytes(bytes(big))).toMatchObject({ ok: false, reason: 'SCORE_FILE_TOO_LARGE' });
    const small = JSON.stringify({ score: 1, metadata: { s: 'x'.repeat(2000) } });
    expect(parseScoreBytes(bytes(small), { maxMetadataBytes: 1024 })).toMatchObject({
      ok: false,
      reason: 'METADATA_TOO_LARGE',
    });
  });

  it('escapes every metadata string, keys included', () => {
    const text = JSON.stringify({
      score: 1,
      metadata: { 'k\u001b[31m': 'line1\nline2\u202e', nested: ['\u0000'] },
    });
    const result = parseScoreBytes(bytes(text));
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.metadata).toEqual({ 'k\\u{1b}[31m': 'line1\\nline2\\u{202e}', nested: ['\\u{0}'] });
    }
  });
});

describe('readScoreFile (real files)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-score-'));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads a valid score file', async () => {
    fs.writeFileSync(path.join(dir, 's.json'), '{"score": 0.5}');
    expect(await readScoreFile(path.join(dir, 's.json'))).toEqual({ ok: true, score: 0.5, metadata: {} });
  });

  it('reports a missing file', async () => {
    expect(await readScoreFile(path.join(dir, 'none.json'))).toMatchObject({
      ok: false,
      reason: 'SCORE_FILE_MISSING',
    });
  });

  it('refuses a 100 MB score file without reading it', async () => {
    const file = path.join(dir, 'big.json');
    const fd = fs.openSync(file, 'w');
    fs.ftruncateSync(fd, 100 * 1024 * 1024);
    fs.closeSync(fd);
    const started = performance.now();
    expect(await readScoreFile(file)).toMatchObject({ ok: false, reason: 'SCORE_FILE_TOO_LARGE' });
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('refuses a symlink to a valid score file (O_NOFOLLOW)', async () => {
    fs.writeFileSync(path.join(dir, 'real.json'), '{"score": 1}');
    fs.symlinkSync(path.join(dir, 'real.json'), path.join(dir, 'link.json'));
    expect(await readScoreFile(path.join(dir, 'link.json'))).toMatchObject({
      ok: false,
      reason: 'SCORE_FILE_NOT_REGULAR',
    });
  });

  it('refuses a FIFO without blocking (O_NONBLOCK)', async () => {
    const fifo = path.join(dir, 'fifo.json');
    expect(spawnSync('/usr/bin/mkfifo', [fifo]).status).toBe(0);
    expect(await readScoreFile(fifo)).toMatchObject({ ok: false, reason: 'SCORE_FILE_NOT_REGULAR' });
  });

  it('refuses a directory and /dev/zero', async () => {
    fs.mkdirSync(path.join(dir, 'd.json'));
    expect(await readScoreFile(path.join(dir, 'd.json'))).toMatchObject({
      ok: false,
      reason: 'SCORE_FILE_NOT_REGULAR',
    });
  });

  it('bounds the score file at the metadata bound plus 4 KiB', () => {
    expect(maxScoreFileBytes()).toBe(64 * 1024 + 4096);
  });
});
