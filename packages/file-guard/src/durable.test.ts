import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BadArgumentError } from '@karotte/base';
import { openDurableLog, writeFileDurably } from './durable.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
function temp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-durable-'));
  made.push(dir);
  return dir;
}

describe('writeFileDurably', () => {
  it('writes atomically with the requested mode, creating parents', async () => {
    const dir = temp();
    const file = path.join(dir, 'a/b/result.json');
    await writeFileDurably(file, '{"score":1}');
    expect(fs.readFileSync(file, 'utf8')).toBe('{"score":1}');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dir, 'a')).mode & 0o777).toBe(0o700);
    await writeFileDurably(file, Buffer.from('second'), { mode: 0o640 });
    expect(fs.readFileSync(file, 'utf8')).toBe('second');
    expect(fs.statSync(file).mode & 0o777).toBe(0o640);
    expect(fs.readdirSync(path.join(dir, 'a/b'))).toEqual(['result.json']);
  });

  it('replaces a link at the path instead of writing through it', async () => {
    const dir = temp();
    fs.writeFileSync(path.join(dir, 'target'), 'precious');
    fs.symlinkSync(path.join(dir, 'target'), path.join(dir, 'result.json'));
    await writeFileDurably(path.join(dir, 'result.json'), 'new');
    expect(fs.readFileSync(path.join(dir, 'target'), 'utf8')).toBe('precious');
    expect(fs.lstatSync(path.join(dir, 'result.json')).isFile()).toBe(true);
  });

  it('refuses relative paths', async () => {
    await expect(writeFileDurably('relative.json', 'x')).rejects.toBeInstanceOf(BadArgumentError);
  });
});

describe('openDurableLog', () => {
  it('appends lines in call order and refuses embedded newlines', async () => {
    const dir = temp();
    const log = await openDurableLog(path.join(dir, 'transcript.jsonl'));
    await Promise.all([log.appendJson({ n: 1 }), log.appendLine('two'), log.appendJson({ text: 'a\nb' })]);
    await expect(log.appendLine('bad\nline')).rejects.toBeInstanceOf(BadArgumentError);
    await log.close();
    await expect(log.appendLine('late')).rejects.toBeInstanceOf(BadArgumentError);
    expect(fs.readFileSync(path.join(dir, 'transcript.jsonl'), 'utf8')).toBe(
      '{"n":1}\ntwo\n{"text":"a\\nb"}\n',
    );
    expect(fs.statSync(path.join(dir, 'transcript.jsonl')).mode & 0o777).toBe(0o600);
    const again = await openDurableLog(path.join(dir, 'transcript.jsonl'), { syncEveryLine: false });
    await again.appendLine('three');
    await again.close();
    expect(fs.readFileSync(path.join(dir, 'transcript.jsonl'), 'utf8').split('\n')).toHaveLength(5);
  });

  it('refuses to append through a link or to a non-file', async () => {
    const dir = temp();
    fs.writeFileSync(path.join(dir, 'target'), '');
    fs.symlinkSync(path.join(dir, 'target'), path.join(dir, 'log'));
    await expect(openDurableLog(path.join(dir, 'log'))).rejects.toThrow(/ELOOP/);
    fs.mkdirSync(path.join(dir, 'dir'));
    await expect(openDurableLog(path.join(dir, 'dir'))).rejects.toThrow();
  });
});
