import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BadArgumentError } from '@karotte/base';
import { afterEach, describe, expect, it } from 'vitest';
import { readApiKey } from './api-key.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function keyFile(text: string, mode: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-agents-key-'));
  dirs.push(dir);
  const file = path.join(dir, 'key');
  fs.writeFileSync(file, text, { mode });
  fs.chmodSync(file, mode);
  return file;
}

async function refusal(source: Parameters<typeof readApiKey>[0], env: Record<string, string> = {}) {
  const error: unknown = await readApiKey(source, env).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(BadArgumentError);
  return error as BadArgumentError;
}

describe('readApiKey', () => {
  it('reads the environment variable (OPENAI_API_KEY by default), trimmed', async () => {
    expect(await readApiKey({}, { OPENAI_API_KEY: ' sk-a \n' })).toBe('sk-a');
    expect(await readApiKey({ apiKeyEnv: 'MINE' }, { MINE: 'sk-b', OPENAI_API_KEY: 'sk-a' })).toBe('sk-b');
    expect((await refusal({ apiKeyEnv: 'MINE' }, { MINE: '  ' })).field).toBe('apiKeyEnv');
    expect((await refusal({})).message).toContain('OPENAI_API_KEY');
  });

  it('reads a private file (0600, 0400), and follows a symlink to it', async () => {
    expect(await readApiKey({ apiKeyFile: keyFile('sk-file\n', 0o600) })).toBe('sk-file');
    const readOnly = keyFile('sk-ro', 0o400);
    const link = `${readOnly}.link`;
    fs.symlinkSync(readOnly, link);
    expect(await readApiKey({ apiKeyFile: link })).toBe('sk-ro');
  });

  it.each([0o640, 0o604, 0o644, 0o660, 0o602])(
    'refuses a file of mode %o (group or others have a bit)',
    async (mode) => {
      const error = await refusal({ apiKeyFile: keyFile('sk-secret', mode) });
      expect(error.field).toBe('apiKeyFile');
      expect(error.message).not.toContain('sk-secret');
    },
  );

  it('refuses a missing, empty, non-regular, oversized or multi-token key file', async () => {
    expect((await refusal({ apiKeyFile: '/nonexistent/karotte-key' })).field).toBe('apiKeyFile');
    expect((await refusal({ apiKeyFile: keyFile('\n', 0o600) })).message).toContain('empty');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-agents-key-'));
    dirs.push(dir);
    expect((await refusal({ apiKeyFile: dir })).field).toBe('apiKeyFile');
    expect((await refusal({ apiKeyFile: keyFile('x'.repeat(20_000), 0o600) })).message).toContain('larger');
    const injected = await refusal({ apiKeyFile: keyFile('sk-a\r\nX-Evil: 1', 0o600) });
    expect(injected.message).not.toContain('sk-a');
  });

  it.skipIf(process.getuid?.() !== 0)('refuses a file owned by another user (as root)', async () => {
    const file = keyFile('sk-other', 0o600);
    fs.chownSync(file, 65534, 65534);
    expect((await refusal({ apiKeyFile: file })).message).toContain('owned by uid 65534');
  });
});
