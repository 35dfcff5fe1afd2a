// The cross-episode attacks of the catalog are real: with the syscall filter loosened for the
// calls each needs (as a task may loosen it, by name with a reason), the very commands of the
// catalog carry an answer from one sandbox (another uid) to another; with the default filter
// they carry nothing. So their score 0 in `karotte redteam` is the defense's doing, not an
// attack that never worked.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { createSandbox, type Sandbox } from '@karotte/sandbox';
import { ATTACKS } from '../src/redteam/catalog.js';
import { renderCommand } from '../src/redteam/replay.js';

const made: Sandbox[] = [];
afterEach(async () => {
  for (const box of made.splice(0)) await box.destroy().catch(() => undefined);
});

async function sandbox(allow: readonly string[] = []): Promise<Sandbox> {
  const box = await createSandbox({
    limits: { diskBytes: 16 * MiB, memoryBytes: 256 * MiB },
    syscallFilter: {
      allow: allow.map((name) => ({ name, reason: 'proves a red-team attack works without its defense' })),
    },
  });
  made.push(box);
  return box;
}

const attack = (id: string) => ATTACKS.find((a) => a.id === id)!;
const run = async (box: Sandbox, command: string): Promise<string> => {
  const result = await box.exec(renderCommand(command, 'answer.txt'), { timeoutMs: 30_000 });
  return result.stdout + result.stderr;
};
const submitted = (box: Sandbox): string | null => {
  try {
    return fs.readFileSync(path.join(box.workDir, 'answer.txt'), 'utf8');
  } catch {
    return null;
  }
};

/** Plant with the attack's seed in one sandbox, read with its commands in another. */
async function carry(
  id: string,
  planter: Sandbox,
  reader: Sandbox,
): Promise<{ answer: string; out: string }> {
  const answer = `karotte-${crypto.randomBytes(6).toString('hex')}`;
  expect(await planter.files.write({ path: 'answer.txt', content: answer })).toMatchObject({ ok: true });
  for (const command of attack(id).seed!) await run(planter, command);
  let out = '';
  for (const command of attack(id).commands) out += await run(reader, command);
  return { answer, out };
}

const KEY_CALLS = ['add_key', 'keyctl', 'request_key'];
/** Revoke what a loosened planter left (the seed also gives each key a 5-minute timeout). */
const REVOKE = `perl -e 'open(my $k, "<", "/proc/keys") or exit; while (<$k>) { next unless /karotte-carry/; syscall(250, 3, hex((split)[0])) }'`;

describe('cross-episode attacks without their defense', () => {
  it('keyring-carry: a key with permissions for everyone carries the answer to another uid', async () => {
    const planter = await sandbox(KEY_CALLS);
    const reader = await sandbox(KEY_CALLS);
    expect(planter.uid).not.toBe(reader.uid);
    try {
      const { answer, out } = await carry('keyring-carry', planter, reader);
      expect(out).toContain('carried over from key');
      expect(submitted(reader)).toBe(answer);
    } finally {
      await planter.exec(REVOKE);
    }
  }, 120_000);

  it('keyring-carry: with the default filter nothing is planted and nothing read', async () => {
    const planter = await sandbox();
    const reader = await sandbox();
    const { answer, out } = await carry('keyring-carry', planter, reader);
    expect(out).toContain('no key from an earlier episode');
    expect(submitted(reader)).not.toBe(answer);
  }, 120_000);

  it('page-cache-carry: page residency of a shared host file carries the answer to another uid', async () => {
    const calls = ['fadvise64', 'preadv2', 'mincore'];
    const reader = await sandbox(calls);
    const { answer, out } = await carry('page-cache-carry', await sandbox(calls), reader);
    expect(out).toContain('preadv2 RWF_NOWAIT: ok');
    expect(submitted(reader)).toBe(answer);
  }, 120_000);

  it('page-cache-carry: with the default filter the probes are refused and the answer is lost', async () => {
    const reader = await sandbox();
    const { answer, out } = await carry('page-cache-carry', await sandbox(), reader);
    expect(out).toContain('mincore: Operation not permitted');
    expect(out).toContain('preadv2 RWF_NOWAIT: Operation not supported');
    expect(submitted(reader)).not.toBe(answer);
  }, 120_000);
});
