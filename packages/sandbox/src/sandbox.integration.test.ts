import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { createSandbox, type Sandbox } from './index.js';
import { pidsOfUid } from '../../../test/support/index.js';

const made: Sandbox[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const sandbox of made.splice(0)) await sandbox.destroy().catch(() => undefined);
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function sandbox(options: Parameters<typeof createSandbox>[0] = {}): Promise<Sandbox> {
  const created = await createSandbox({
    limits: { diskBytes: 16 * MiB, memoryBytes: 256 * MiB, ...(options.limits ?? {}) },
    ...options,
  });
  made.push(created);
  return created;
}

describe('createSandbox', () => {
  it('gives a fresh unprivileged uid, a persistent shell and a clean teardown', async () => {
    const box = await sandbox();
    expect(box.uid).toBeGreaterThanOrEqual(2_000_000_000);
    expect(box.networkCheck.ok).toBe(true);
    const id = await box.exec('id -u; id -G; whoami; pwd; echo $HOME');
    expect(id.stdout).toBe(`${box.uid}\n${box.uid}\nstudent\n/home/student\n/home/student\n`);
    expect(await box.exec('echo hi')).toMatchObject({
      stdout: 'hi\n',
      stderr: '',
      exitCode: 0,
      timedOut: false,
    });
    const v = await box.files.write({ path: 'a.txt', content: 'one\ntwo\nthree\n' });
    expect(v).toEqual({ ok: true, bytes: 14 });
    expect(fs.readFileSync(`${box.workDir}/a.txt`, 'utf8')).toBe('one\ntwo\nthree\n');
    expect(await box.files.view({ path: 'a.txt', startLine: 2 })).toMatchObject({
      ok: true,
      content: 'two\nthree\n',
      totalLines: 3,
      endLine: 3,
    });
    expect(await box.files.replace({ path: 'a.txt', oldText: 'two', newText: '2' })).toMatchObject({
      ok: true,
      replacements: 1,
    });
    expect(await box.files.list()).toMatchObject({
      ok: true,
      entries: [{ name: 'a.txt', type: 'file', size: 12 }],
    });
    const report = await box.destroy();
    expect(report.leftovers).toEqual([]);
    expect(pidsOfUid(box.uid)).toEqual([]);
  });
});
