// Setup under churn: host mounts that appear and vanish while sandboxes are being built (other
// episodes' quotas, `ip netns` binds, other tests' tmpfs). A sandbox copies the host's mounts
// when it is created; when the host removes a mount point, the kernel detaches that copy in
// every namespace, possibly between the moment setup listed it and the moment it remounts it
// read-only. That race was the intermittent SETUP_FAILED of concurrent creates.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { mountViolations } from './confinement/mounts.js';
import { createSandbox, type Sandbox } from './index.js';
import { mountsUnder, pidsOfUid } from '../../../test/support/index.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * Mount a tmpfs at a fresh directory under `dir`, hold it briefly, unmount it, remove the
 * directory; repeat until the file `stop` exists. It stops only between rounds: a churner
 * killed mid-round could leave a \`mount\` running that mounts after the cleanup looked.
 */
const CHURN = `
i=0
while [ ! -e "$2" ]; do
  d="$1/m$i"
  mkdir "$d" && mount -t tmpfs -o size=64k karotte-churn "$d" && sleep 0.01
  umount "$d" 2>/dev/null; rmdir "$d" 2>/dev/null
  i=$((i + 1))
done
`;

async function startChurn(count: number): Promise<string> {
  const base = fs.mkdtempSync('/var/tmp/karotte-churn-');
  const churners: ChildProcess[] = [];
  const stop = `${base}.stop`;
  cleanups.push(async () => {
    fs.writeFileSync(stop, '');
    const hung = setTimeout(() => {
      for (const churner of churners) churner.kill('SIGKILL');
    }, 20_000);
    await Promise.all(
      churners.map(
        (churner) =>
          new Promise((resolve) => {
            if (churner.exitCode !== null || churner.signalCode !== null) resolve(undefined);
            else churner.once('exit', resolve);
          }),
      ),
    );
    clearTimeout(hung);
    for (const mountPoint of mountsUnder(base).reverse()) spawnSync('/usr/bin/umount', ['-l', mountPoint]);
    fs.rmSync(base, { recursive: true, force: true });
    fs.rmSync(stop, { force: true });
    expect(mountsUnder(base)).toEqual([]);
  });
  for (let index = 0; index < count; index += 1) {
    const dir = path.join(base, String(index));
    fs.mkdirSync(dir);
    churners.push(spawn('/usr/bin/bash', ['-c', CHURN, 'karotte-churn', dir, stop], { stdio: 'ignore' }));
  }
  // Churning for real before the first sandbox starts.
  const deadline = Date.now() + 10_000;
  while (mountsUnder(base).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  return base;
}

describe('setup', () => {
  it('leaves host mounts that a stacked mount hides, and makes the top of the stack read-only', async () => {
    // On the host: a tmpfs with a mount inside it, then another tmpfs stacked over the first.
    // The inner mount is unreachable (its path now leads into the top tmpfs, which has no
    // such directory): a remount by path cannot reach it and must not be tried.
    const base = fs.mkdtempSync('/var/tmp/karotte-stack-');
    const mount = (...args: string[]): void => {
      const result = spawnSync('/usr/bin/mount', args, { encoding: 'utf8' });
      expect(result.status, result.stderr).toBe(0);
    };
    cleanups.push(() => {
      for (const mountPoint of mountsUnder(base).reverse()) spawnSync('/usr/bin/umount', ['-l', mountPoint]);
      spawnSync('/usr/bin/umount', ['-l', base]);
      spawnSync('/usr/bin/umount', ['-l', base]);
      fs.rmSync(base, { recursive: true, force: true });
    });
    mount('-t', 'tmpfs', '-o', 'size=64k', 'karotte-stack-bottom', base);
    fs.mkdirSync(path.join(base, 'inner'));
    mount('-t', 'tmpfs', '-o', 'size=64k', 'karotte-stack-inner', path.join(base, 'inner'));
    mount('-t', 'tmpfs', '-o', 'size=64k', 'karotte-stack-top', base);
    // hostView 'all': the host mounts under /var/tmp must be in the sandbox's view (the
    // default covers /var/tmp, and what a cover hides is not swept).
    const box = await createSandbox({
      hostView: 'all',
      limits: { diskBytes: 8 * MiB, memoryBytes: 128 * MiB },
    });
    cleanups.push(async () => {
      await box.destroy().catch(() => undefined);
    });
    const seen = await box.exec(`ls -A ${base}; touch ${base}/x 2>&1; echo $?`);
    expect(seen.stdout).toMatch(/Read-only file system\n1\n$/);
    expect(seen.stdout).not.toContain('inner');
    expect((await box.destroy()).leftovers).toEqual([]);
  });

  it('survives host mounts vanishing while it runs, and still proves every reachable mount read-only', async () => {
    await startChurn(2);
    const made: Sandbox[] = [];
    cleanups.push(async () => {
      await Promise.all(made.map((box) => box.destroy().catch(() => undefined)));
    });
    const rounds = await Promise.allSettled(
      Array.from({ length: 8 }, async () => {
        const box = await createSandbox({
          hostView: 'all',
          limits: { diskBytes: 8 * MiB, memoryBytes: 128 * MiB, pids: 64, tmpBytes: 4 * MiB },
        });
        made.push(box);
        return box;
      }),
    );
    const failures = rounds.flatMap((round) =>
      round.status === 'rejected' ? [(round.reason as Error).message] : [],
    );
    expect(failures).toEqual([]);
    for (const box of made) {
      // The mount table of the namespace, read from outside, as setup's own check did. Other
      // members of the group may exit between the listing and the read (the shell that
      // createSandbox prestarts is still starting): a vanished pid is not the init.
      const init = (await box.handle.group.pids()).find((pid) => {
        try {
          return /^NSpid:\s+\d+\s+1$/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
        } catch {
          return false;
        }
      });
      expect(init).toBeDefined();
      const table = fs.readFileSync(`/proc/${init}/mountinfo`, 'utf8');
      expect(mountViolations(table, ['/tmp', '/dev/shm', box.studentWorkDir])).toEqual([]);
      expect((await box.exec('touch /var/tmp/karotte-churn-probe 2>&1; echo $?')).stdout).toMatch(
        /Read-only file system\n1\n$/,
      );
    }
    const uids = made.map((box) => box.uid);
    const reports = await Promise.all(made.splice(0).map((box) => box.destroy()));
    for (const report of reports) expect(report.leftovers).toEqual([]);
    for (const uid of uids) expect(pidsOfUid(uid)).toEqual([]);
  }, 240_000);
});
