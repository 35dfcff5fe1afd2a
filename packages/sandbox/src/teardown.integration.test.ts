// A teardown that meets a passing fault tries again before it gives up: here a student process
// frozen in a cgroup freezer outside the sandbox's group (a SIGKILL stays pending on a frozen
// task: the reap confirms it can never run, but the first pass cannot see it exit), thawed a
// moment later. The sandbox must end
// clean, lease released, once the fault has passed — not keep the uid leased for good.
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { pidsOfUid, waitFor } from '../../../test/support/index.js';
import { V1TestGroup } from '../../proc-reaper/test/fixtures.js';
import { DEFAULT_SANDBOX_STATE_DIR, createSandbox, listLeases, type Sandbox } from './index.js';

const made: Sandbox[] = [];
const groups: V1TestGroup[] = [];
afterEach(async () => {
  for (const group of groups.splice(0)) await group.destroy();
  for (const box of made.splice(0)) await box.destroy().catch(() => undefined);
});

describe('teardown', () => {
  it('tries again after a passing fault, then releases everything', async () => {
    const box = await createSandbox({
      limits: { diskBytes: 16 * MiB, memoryBytes: 128 * MiB },
      // The first pass gives up waiting for the frozen process's exit after a second.
      reapDeadlineMs: 1000,
    });
    made.push(box);
    expect(await box.exec('sleep 1000 > /dev/null 2>&1 &')).toMatchObject({ exitCode: 0 });
    let pid: number | undefined;
    await waitFor(() => {
      pid = pidsOfUid(box.uid).find((candidate) =>
        fs.readFileSync(`/proc/${candidate}/cmdline`, 'utf8').startsWith('sleep\0'),
      );
      return pid !== undefined;
    }, 5000);
    const group = V1TestGroup.create('sandbox-teardown');
    groups.push(group);
    fs.writeFileSync(`${group.freezerDir}/cgroup.procs`, String(pid));
    const state = `${group.freezerDir}/freezer.state`;
    fs.writeFileSync(state, 'FROZEN');
    await waitFor(() => fs.readFileSync(state, 'utf8').trim() === 'FROZEN', 5000);
    // Thawed 1.5 s into the teardown: after its first pass gave up, before its last.
    const thawed = new Promise<void>((resolve) => {
      setTimeout(() => {
        fs.writeFileSync(state, 'THAWED');
        resolve();
      }, 1500);
    });
    const report = await box.destroy();
    await thawed;
    expect(report.leftovers).toEqual([]);
    expect(report.reap?.confirmedEmpty).toBe(true);
    expect(report.durationMs).toBeGreaterThanOrEqual(1000);
    expect(pidsOfUid(box.uid)).toEqual([]);
    expect(listLeases(DEFAULT_SANDBOX_STATE_DIR).some((lease) => lease.uid === box.uid)).toBe(false);
  });
});
