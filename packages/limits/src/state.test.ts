// Owner records and the checks recovery relies on (no root needed: nothing here is reclaimed).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { identityOf } from '@karotte/base';
import { recoverLimitLeftovers } from './recover.js';
import {
  checkSafeDir,
  claimRecord,
  ensureSafeDir,
  groupRecordSchema,
  readRecords,
  writeRecord,
} from './state.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function scratch(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-state-'));
  made.push(dir);
  return dir;
}

const self = identityOf(process.pid)!;

describe('state directories and records', () => {
  it('refuses a directory writable by others or a symlink', () => {
    const dir = scratch();
    const open = path.join(dir, 'open');
    fs.mkdirSync(open);
    fs.chmodSync(open, 0o777);
    expect(() => {
      checkSafeDir(open);
    }).toThrow(expect.objectContaining({ code: 'UNSAFE_STATE_DIR' }) as unknown);
    const link = path.join(dir, 'link');
    fs.symlinkSync(dir, link);
    expect(() => {
      ensureSafeDir(link, 0o700);
    }).toThrow(expect.objectContaining({ code: 'UNSAFE_STATE_DIR' }) as unknown);
  });

  it('writes records atomically and reads them back through the schema; garbage is invalid, not trusted', () => {
    const dir = scratch();
    const record = {
      kind: 'group' as const,
      format: 1 as const,
      name: 'karotte-x',
      owner: self,
      createdAtMs: 1,
      cgroupVersion: 1 as const,
      dirs: ['/sys/fs/cgroup/pids/karotte-x'],
    };
    writeRecord(dir, 'karotte-x', record);
    fs.writeFileSync(path.join(dir, 'karotte-bad.json'), '{"kind":"group","dirs":["/etc"]}');
    expect((fs.statSync(path.join(dir, 'karotte-x.json')).mode & 0o777).toString(8)).toBe('600');
    const found = readRecords(dir, groupRecordSchema).sort((a, b) => a.file.localeCompare(b.file));
    expect(found.map((item) => [item.file, item.record === null])).toEqual([
      ['karotte-bad.json', true],
      ['karotte-x.json', false],
    ]);
    expect(found[1]!.record).toEqual(record);
    // A record may only name karotte paths.
    expect(groupRecordSchema.safeParse({ ...record, dirs: ['/sys/fs/cgroup/pids/user.slice'] }).success).toBe(
      false,
    );
    expect(groupRecordSchema.safeParse({ ...record, dirs: ['/x/karotte-a/../../etc'] }).success).toBe(false);
  });

  it('of two claims of one record only the first wins (atomic rename)', () => {
    const dir = scratch();
    fs.writeFileSync(path.join(dir, 'karotte-y.json'), '{}');
    const first = claimRecord(dir, 'karotte-y.json');
    expect(first).toBe(`karotte-y.json.claim-${self.pid}-${self.startTicks}`);
    expect(claimRecord(dir, 'karotte-y.json')).toBeNull();
    const claims = readRecords(dir, groupRecordSchema);
    expect(claims[0]!.claimedBy).toMatchObject({ pid: self.pid, startTicks: self.startTicks });
  });
});

describe('recoverLimitLeftovers refuses forged quota records', () => {
  it('a dead owner record naming an image outside its image directory is invalid and untouched', async () => {
    const imageDir = scratch();
    const stateDir = scratch();
    const victim = path.join(scratch(), 'karotte-victim.img');
    fs.writeFileSync(victim, 'keep me');
    fs.mkdirSync(path.join(imageDir, 'quotas'), { mode: 0o700 });
    const forged = path.join(imageDir, 'quotas', 'karotte-forged.json');
    fs.writeFileSync(
      forged,
      JSON.stringify({
        kind: 'quota',
        format: 1,
        id: 'karotte-forged',
        owner: { pid: 999_999_999, startTicks: 1, bootId: 'gone' },
        createdAtMs: 1,
        phase: 'in_use',
        image: victim,
        mountPoint: path.join(imageDir, 'mnt', 'karotte-forged'),
      }),
    );
    const report = await recoverLimitLeftovers({ stateDir, imageDir });
    expect(report.invalid).toEqual([forged]);
    expect(report.reclaimed).toEqual([]);
    expect(fs.readFileSync(victim, 'utf8')).toBe('keep me');
    expect(fs.existsSync(forged)).toBe(true);
  });

  it('records in a directory writable by others are not read at all', async () => {
    const imageDir = scratch();
    fs.mkdirSync(path.join(imageDir, 'quotas'));
    fs.chmodSync(path.join(imageDir, 'quotas'), 0o777);
    await expect(recoverLimitLeftovers({ stateDir: scratch(), imageDir })).rejects.toMatchObject({
      code: 'UNSAFE_STATE_DIR',
    });
  });
});
