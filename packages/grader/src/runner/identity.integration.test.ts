// Grader uids: exclusive lock entries and no subordinate ids. The host's /etc/subuid is not
// touched: the allocator reads files this test writes.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../../test/support/index.js';
import { allocateGraderIdentity, GRADER_UID_RANGE } from './identity.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

describe('allocateGraderIdentity', () => {
  it('never hands out a uid that owns or lies in a subordinate id range', async () => {
    const dir = tempDir('grader-ids');
    cleanups.push(dir.cleanup);
    const first = 1_999_000_000;
    fs.writeFileSync(path.join(dir.dir, 'subuid'), `# podman\ncontainers:${first}:1\n`);
    fs.writeFileSync(path.join(dir.dir, 'subgid'), '');
    const options = {
      lockDir: path.join(dir.dir, 'locks'),
      first,
      count: 2,
      subordinateIdFiles: [path.join(dir.dir, 'subuid'), path.join(dir.dir, 'subgid')],
    };
    // first lies in a range: only first + 1 may be handed out (32 random draws of 2 uids).
    const identity = await allocateGraderIdentity(options);
    expect(identity.uid).toBe(first + 1);
    await expect(allocateGraderIdentity(options)).rejects.toMatchObject({ code: 'SETUP_FAILED' });
    await identity.release();
  });

  it('the default range lies below 2^31 - 1 (outside the subordinate range podman recommends)', () => {
    expect(GRADER_UID_RANGE.first + GRADER_UID_RANGE.count).toBeLessThanOrEqual(2_147_483_647);
    expect(GRADER_UID_RANGE.first + GRADER_UID_RANGE.count).toBeLessThanOrEqual(2_000_000_000);
  });
});
