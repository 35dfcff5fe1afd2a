// Many sandboxes at once, a fork bomb, and teardown that leaves nothing behind.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { DEFAULT_SANDBOX_STATE_DIR, createSandbox, listLeases, type Sandbox } from './index.js';
import { pidsOfUid, waitFor } from '../../../test/support/index.js';

const made: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(made.splice(0).map((box) => box.destroy().catch(() => undefined)));
});

function mounted(): string {
  return fs.readFileSync('/proc/self/mountinfo', 'utf8');
}

describe('resources', () => {
  it('a fork bomb hits the pids limit, the harness lives, and teardown proves every process gone', async () => {
    const box = await createSandbox({ limits: { diskBytes: 16 * MiB, memoryBytes: 256 * MiB, pids: 64 } });
    made.push(box);
    expect(box.appliedLimits.pids).toBe(64); // read back before the bomb
    await box.exec('bash -c ":(){ :|:& };:; wait"', { timeoutMs: 3000 });
    // The bomb backgrounds itself: the command ends at once, while the bomb goes on and
    // saturates the group (or the command's timeout stops it first: either way). The kernel's
    // own count of refused forks is the proof; what the bomb prints may come after the
    // command's output was closed.
    await waitFor(async () => (await box.limitEvents()).some((event) => event.limit === 'pids'));
    expect((await box.handle.group.pids()).length).toBeLessThanOrEqual(64);
    const report = await box.destroy();
    expect(report.reap?.confirmedEmpty).toBe(true);
    expect(report.leftovers).toEqual([]);
    expect(pidsOfUid(box.uid)).toEqual([]);
  });

  it('16 sandboxes at once: distinct uids, no cross-reading, nothing left after teardown', async () => {
    const boxes = await Promise.all(
      Array.from({ length: 16 }, () =>
        createSandbox({
          limits: { diskBytes: 8 * MiB, memoryBytes: 128 * MiB, pids: 64, tmpBytes: 4 * MiB },
        }),
      ),
    );
    made.push(...boxes);
    expect(new Set(boxes.map((box) => box.uid)).size).toBe(16);
    const leases = listLeases(DEFAULT_SANDBOX_STATE_DIR).map((lease) => lease.uid);
    for (const box of boxes) expect(leases).toContain(box.uid);
    await Promise.all(boxes.map((box) => box.exec(`echo secret-of-${box.uid} > ~/mine; echo x > /tmp/t`)));
    // Each tries every other sandbox's working directory (host path) and its uid's files anywhere.
    const others = boxes.map((box) => box.workDir).join(' ');
    const reads = await Promise.all(
      boxes.map((box) =>
        box.exec(
          `cat ${others} 2>/dev/null; for d in ${others}; do cat $d/mine; done 2>/dev/null; cat ~/mine`,
        ),
      ),
    );
    for (const [index, result] of reads.entries()) {
      expect(result.stdout).toBe(`secret-of-${boxes[index]!.uid}\n`);
    }
    const workDirs = boxes.map((box) => box.workDir);
    const groupDirs = boxes.flatMap((box) => box.cgroupDirs);
    const reports = await Promise.all(boxes.map((box) => box.destroy()));
    for (const report of reports) expect(report.leftovers).toEqual([]);
    for (const box of boxes) expect(pidsOfUid(box.uid)).toEqual([]);
    const mounts = mounted();
    for (const dir of workDirs) expect(mounts).not.toContain(` ${dir} `);
    for (const dir of groupDirs) expect(fs.existsSync(dir)).toBe(false);
    const after = listLeases(DEFAULT_SANDBOX_STATE_DIR).map((lease) => lease.uid);
    for (const box of boxes) {
      expect(after).not.toContain(box.uid);
      expect(fs.existsSync(path.join(DEFAULT_SANDBOX_STATE_DIR, box.id))).toBe(false);
    }
  }, 240_000);

  it('destroy is idempotent and exec after destroy is refused', async () => {
    const box = await createSandbox({ limits: { diskBytes: 8 * MiB, memoryBytes: 128 * MiB } });
    made.push(box);
    const first = await box.destroy();
    const second = await box.destroy();
    expect(second).toBe(first);
    expect(() => box.exec('true')).toThrow(/destroyed/);
    expect(() => box.restart()).toThrow(expect.objectContaining({ code: 'DESTROYED' }));
  });
});
