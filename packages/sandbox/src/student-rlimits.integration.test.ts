// The per-process limits of the student's processes in a real sandbox, read by the harness
// from /proc/<pid>/limits (outside the sandbox, so nothing the student runs can fake them).
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { createSandbox, type Sandbox } from './index.js';
import { pidsOfUid } from '../../../test/support/index.js';

const made: Sandbox[] = [];
afterEach(async () => {
  for (const sandbox of made.splice(0)) {
    const uid = sandbox.uid;
    await sandbox.destroy();
    expect(pidsOfUid(uid)).toEqual([]);
  }
});

type SandboxLimits = NonNullable<NonNullable<Parameters<typeof createSandbox>[0]>['limits']>;

async function sandbox(limits: SandboxLimits = {}): Promise<Sandbox> {
  const created = await createSandbox({ limits: { diskBytes: 16 * MiB, memoryBytes: 128 * MiB, ...limits } });
  made.push(created);
  return created;
}

/** /proc/<pid>/limits of every live process of `uid`, read from outside. */
function limitsOfUid(uid: number): string[] {
  return pidsOfUid(uid).flatMap((pid) => {
    try {
      return [fs.readFileSync(`/proc/${pid}/limits`, 'utf8')];
    } catch {
      return [];
    }
  });
}

describe("the student's rlimits", () => {
  it('RLIMIT_MEMLOCK is 64 KiB (soft and hard) in every student process, and stays so', async () => {
    const box = await sandbox();
    // A long-running student process next to the shell and its relays.
    await box.exec('sleep 60 & ulimit -l 100000; ulimit -H -l 100000; true');
    const all = limitsOfUid(box.uid);
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (const limits of all) expect(limits).toMatch(/^Max locked memory\s+65536\s+65536\s+bytes/m);
    expect((await box.exec('ulimit -l; ulimit -H -l')).stdout).toBe('64\n64\n');
  });

  it('a sandbox can be given another value (limits.memlockBytes)', async () => {
    const box = await sandbox({ memlockBytes: 0 });
    await box.exec('sleep 60 &');
    const all = limitsOfUid(box.uid);
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (const limits of all) expect(limits).toMatch(/^Max locked memory\s+0\s+0\s+bytes/m);
  });
});
