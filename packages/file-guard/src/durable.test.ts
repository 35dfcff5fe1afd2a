import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fsp from 'node:fs/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BadArgumentError } from '@karotte/base';
import { openDurableLog, writeFileDurably } from './durable.js';

const made: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
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

/**
 * Records, in order, every flush to disk (FileHandle sync/datasync, named by the path the
 * descriptor points to) and every rename. Spies wrap the real calls: the files are real.
 */
async function recordFlushes(dir: string): Promise<string[]> {
  const events: string[] = [];
  const probe = await fsp.open(dir, fs.constants.O_RDONLY);
  const proto = Object.getPrototypeOf(probe) as {
    sync: () => Promise<void>;
    datasync: () => Promise<void>;
  };
  await probe.close();
  // Temporary names carry a random part; it is masked so the sequence can be compared.
  const masked = (name: string): string => name.replace(/karotte-[0-9a-f]+/, 'karotte-X');
  const where = (handle: { fd: number }): string =>
    masked(path.relative(dir, fs.readlinkSync(`/proc/self/fd/${handle.fd}`))) || '.';
  for (const method of ['sync', 'datasync'] as const) {
    const real = proto[method];
    vi.spyOn(proto, method).mockImplementation(function (this: { fd: number }) {
      events.push(`${method} ${where(this)}`);
      return real.call(this);
    });
  }
  const rename = fsp.rename.bind(fsp);
  vi.spyOn(fsp, 'rename').mockImplementation(async (from, to) => {
    events.push(
      `rename ${path.basename(String(from)).replace(/karotte-[0-9a-f]+/, 'karotte-X')} -> ${path.basename(String(to))}`,
    );
    return rename(from, to);
  });
  return events;
}

describe('durability (what reaches the disk, and when)', () => {
  it('writeFileDurably flushes the data before the rename and the directory after it', async () => {
    const dir = temp();
    fs.writeFileSync(path.join(dir, 'result.json'), 'old');
    const events = await recordFlushes(dir);
    await writeFileDurably(path.join(dir, 'result.json'), 'new');
    expect(events).toEqual([
      'sync .result.json.karotte-X.tmp',
      'rename .result.json.karotte-X.tmp -> result.json',
      'sync .',
    ]);
    expect(fs.readFileSync(path.join(dir, 'result.json'), 'utf8')).toBe('new');
  });

  it('a durable log flushes a new file into its directory, then every line before its append resolves', async () => {
    const dir = temp();
    const events = await recordFlushes(dir);
    const log = await openDurableLog(path.join(dir, 'transcript.jsonl'));
    expect(events).toEqual(['sync transcript.jsonl', 'sync .']);
    await log.appendJson({ n: 1 });
    expect(events.at(-1)).toBe('datasync transcript.jsonl');
    await log.appendJson({ n: 2 });
    expect(events.filter((event) => event === 'datasync transcript.jsonl')).toHaveLength(2);
    await log.close();
    expect(events.at(-1)).toBe('sync transcript.jsonl');
  });
});
