import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJsonFile } from './json-file.js';

const schema = z.strictObject({
  id: z.string(),
  limits: z.strictObject({ pids: z.number().int() }).optional(),
});

describe('readJsonFile (real files)', () => {
  let dir: string;
  const write = (name: string, text: string | Buffer): string => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  };
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-json-file-'));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('returns the value the schema parsed', async () => {
    const file = write('t.json', '{"id": "a", "limits": {"pids": 64}}');
    expect(await readJsonFile(file, { maxBytes: 1024, schema })).toEqual({
      ok: true,
      value: { id: 'a', limits: { pids: 64 } },
    });
  });

  it('refuses a symlink, a directory and a file over maxBytes, naming the file by what', async () => {
    const real = write('real.json', '{"id": "a"}');
    fs.symlinkSync(real, path.join(dir, 'link.json'));
    expect(
      await readJsonFile(path.join(dir, 'link.json'), { maxBytes: 1024, schema, what: 'task.json' }),
    ).toMatchObject({ ok: false, refusal: 'symlink', message: 'task.json: is a symbolic link' });
    fs.mkdirSync(path.join(dir, 'd.json'));
    expect(await readJsonFile(path.join(dir, 'd.json'), { maxBytes: 1024, schema })).toMatchObject({
      ok: false,
      refusal: 'not_regular',
    });
    expect(await readJsonFile(real, { maxBytes: 5, schema })).toMatchObject({
      ok: false,
      refusal: 'too_large',
    });
    expect(await readJsonFile(path.join(dir, 'none.json'), { maxBytes: 5, schema })).toMatchObject({
      ok: false,
      refusal: 'missing',
    });
  });

  it('refuses what JSON.parse would accept silently: duplicate keys, Infinity, bad UTF-8, deep nesting', async () => {
    const options = { maxBytes: 4096, schema, what: 'task.json' };
    expect(await readJsonFile(write('dup.json', '{"id": "a", "id": "b"}'), options)).toMatchObject({
      ok: false,
      refusal: 'invalid_json',
      message: expect.stringMatching(/^task\.json is not valid JSON: duplicate key "id"/) as unknown,
    });
    expect(
      await readJsonFile(write('inf.json', '{"id": "a", "limits": {"pids": 1e999}}'), options),
    ).toMatchObject({ ok: false, refusal: 'invalid_json' });
    expect(await readJsonFile(write('utf.json', Buffer.from([0x7b, 0xff, 0x7d])), options)).toMatchObject({
      ok: false,
      refusal: 'invalid_json',
      message: 'task.json is not valid UTF-8',
    });
    const deep = `${'['.repeat(65)}${']'.repeat(65)}`;
    expect(await readJsonFile(write('deep.json', deep), options)).toMatchObject({
      ok: false,
      refusal: 'invalid_json',
    });
    expect(await readJsonFile(write('deep.json', deep), { ...options, maxDepth: 65 })).toMatchObject({
      ok: false,
      refusal: 'invalid_shape',
    });
  });

  it('reports a schema mismatch with the first offending field', async () => {
    const file = write('bad.json', '{"id": "a", "limits": {"pids": "many"}}');
    const result = await readJsonFile(file, { maxBytes: 1024, schema, what: 'task.json' });
    expect(result).toMatchObject({ ok: false, refusal: 'invalid_shape', field: 'limits.pids' });
    expect(!result.ok && result.message).toMatch(/^invalid task\.json: limits\.pids: /);
    const unknown = await readJsonFile(write('u.json', '{"id": "a", "idd": 1}'), { maxBytes: 1024, schema });
    expect(unknown).toMatchObject({ ok: false, refusal: 'invalid_shape', field: 'idd' });
  });
});
