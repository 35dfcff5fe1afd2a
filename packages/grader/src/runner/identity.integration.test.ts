// Grader uids are leased by the student sandbox's allocator (@karotte/sandbox/confinement):
// the same lock files, the same checks, and a dead holder's leftovers reclaimed before reuse.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bootId } from '@karotte/base';
import { tempDir } from '../../../../test/support/index.js';
import { allocateGraderIdentity, GRADER_UID_RANGE } from './identity.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function places(root: string): { workDir: string; cgroupRoot: string } {
  const workDir = path.join(root, 'work');
  fs.mkdirSync(workDir, { recursive: true });
  // No cgroup of these uids exists: an empty directory stands for the cgroup root.
  const cgroupRoot = path.join(root, 'cgroup');
  fs.mkdirSync(cgroupRoot, { recursive: true });
  return { workDir, cgroupRoot };
}

describe('allocateGraderIdentity', () => {
  it('leases distinct uids in whole lock files and says when none is left', async () => {
    const dir = tempDir('grader-ids');
    cleanups.push(dir.cleanup);
    const options = {
      lockDir: path.join(dir.dir, 'locks'),
      first: 1_999_000_000,
      count: 2,
      places: places(dir.dir),
    };
    const [a, b] = await Promise.all([allocateGraderIdentity(options), allocateGraderIdentity(options)]);
    expect(new Set([a.uid, b.uid])).toEqual(new Set([1_999_000_000, 1_999_000_001]));
    expect(a.gid).toBe(a.uid);
    const record = JSON.parse(fs.readFileSync(a.lockPath, 'utf8')) as Record<string, unknown>;
    expect(record).toMatchObject({ uid: a.uid, ownerPid: process.pid, bootId: bootId() });
    expect(record['sandboxId']).toMatch(/^grader-[0-9a-f]+$/);
    await expect(allocateGraderIdentity(options)).rejects.toMatchObject({
      code: 'SETUP_FAILED',
      message: expect.stringContaining('NO_FREE_IDENTITY') as unknown,
    });
    a.release();
    b.release();
    expect(fs.readdirSync(options.lockDir)).toEqual([]);
  });

  it("reclaims a dead holder's grading directories before handing its uid out again", async () => {
    const dir = tempDir('grader-ids');
    cleanups.push(dir.cleanup);
    const uid = 1_999_000_010;
    const options = { lockDir: path.join(dir.dir, 'locks'), first: uid, count: 1, places: places(dir.dir) };
    // A holder that is gone: a process that ran and exited (its pid no longer names it).
    const gone = spawnSync('/bin/true');
    expect(gone.status).toBe(0);
    fs.mkdirSync(options.lockDir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(
      path.join(options.lockDir, `${uid}.lock`),
      JSON.stringify({
        uid,
        sandboxId: 'grader-dead',
        ownerPid: gone.pid,
        ownerStartTime: 1,
        bootId: bootId(),
        createdAt: new Date().toISOString(),
      }),
      { mode: 0o600 },
    );
    const leftover = path.join(options.places.workDir, `karotte-grade-${uid}-abc123`);
    fs.mkdirSync(leftover);
    const lease = await allocateGraderIdentity(options);
    expect(lease.uid).toBe(uid);
    expect(fs.existsSync(leftover)).toBe(false);
    lease.release();
  });

  it('the default range lies below 2^31 - 1 (outside the subordinate range podman recommends)', () => {
    expect(GRADER_UID_RANGE.first + GRADER_UID_RANGE.count).toBeLessThanOrEqual(2_147_483_647);
    expect(GRADER_UID_RANGE.first + GRADER_UID_RANGE.count).toBeLessThanOrEqual(2_000_000_000);
  });
});
