// Setup under churn: host mounts that appear and vanish while sandboxes are being built (other
// episodes' quotas, `ip netns` binds, other tests' tmpfs). A sandbox copies the host's mounts
// when it is created; when the host removes a mount point, the kernel detaches that copy in
// every namespace, possibly between the moment setup listed it and the moment it remounts it
// read-only. That race was the intermittent SETUP_FAILED of concurrent creates.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB, resolveTrustedBinary } from '@karotte/base';
import { mountViolations } from './confinement/mounts.js';
import { SETUP_SCRIPT } from './confinement/scripts.js';
import { createSandbox, type Sandbox } from './index.js';
import { pidsOfUid } from '../../../test/support/index.js';

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

function mountsUnder(dir: string): string[] {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mountPoint) => mountPoint.startsWith(`${dir}/`));
}

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

/**
 * `count` tmpfs mounts under a fresh directory, each unmounted, its directory removed and made
 * again, and mounted again, in a tight loop until the file `stop` exists: the copies of these
 * mounts in every other namespace keep being detached (the kernel does it on the rmdir).
 */
const STORM = `
cd "$1" || exit 1
for i in $(seq "$2"); do mkdir "m$i" && mount -t tmpfs -o size=64k karotte-storm "m$i"; done
while [ ! -e "$3" ]; do
  for i in $(seq "$2"); do umount "m$i"; rmdir "m$i"; mkdir "m$i"; mount -t tmpfs -o size=64k karotte-storm "m$i"; done
done
for i in $(seq "$2"); do umount "m$i"; rmdir "m$i"; done
`;

describe('setup', () => {
  it('reads the mount table whole while mounts vanish under it: 150 sweeps, each proving every mount read-only', async () => {
    // What broke: bash's `while read ... < mountinfo` seeks back after each line, the kernel
    // renders the table again to that offset, and a mount detached meanwhile shifts it into
    // another line. A lost line was a mount left writable; a cut one, a bad array subscript,
    // on which bash abandoned the rest of setup and still printed karotte-ready.
    const base = fs.mkdtempSync('/var/tmp/karotte-storm-');
    const stop = `${base}.stop`;
    // Where init writes the tables: a mount of its own, which the sweep is told to leave writable.
    const out = fs.mkdtempSync('/var/tmp/karotte-storm-out-');
    const mounted = spawnSync(
      '/usr/bin/mount',
      ['-t', 'tmpfs', '-o', 'size=16m,nosuid,nodev', 'karotte-storm-out', out],
      {
        encoding: 'utf8',
      },
    );
    expect(mounted.status, mounted.stderr).toBe(0);
    const storm = spawn('/usr/bin/bash', ['-c', STORM, 'karotte-storm', base, '30', stop], {
      stdio: 'ignore',
    });
    const stormEnded = new Promise((resolve) => storm.once('exit', resolve));
    cleanups.push(async () => {
      fs.writeFileSync(stop, '');
      const hung = setTimeout(() => storm.kill('SIGKILL'), 20_000);
      await stormEnded;
      clearTimeout(hung);
      for (const mountPoint of mountsUnder(base).reverse()) spawnSync('/usr/bin/umount', ['-l', mountPoint]);
      fs.rmSync(base, { recursive: true, force: true });
      spawnSync('/usr/bin/umount', [out]);
      fs.rmSync(out, { recursive: true, force: true });
      fs.rmSync(stop, { force: true });
      expect(mountsUnder(base)).toEqual([]);
      expect(mountsUnder(path.dirname(out)).filter((m) => m === out)).toEqual([]);
    });
    const deadline = Date.now() + 10_000;
    while (mountsUnder(base).length < 30 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const bins = ['mount', 'ip', 'sh', 'cat', 'perl'].map((name) => resolveTrustedBinary(name));
    const problems: string[] = [];
    for (let run = 0; run < 150; run += 1) {
      const table = path.join(out, `table-${run}`);
      // The setup script as the sandbox runs it, in a fresh private mount namespace, with an
      // init that writes the final table where the sweep leaves things writable (the prefix).
      const setup = spawnSync(
        resolveTrustedBinary('unshare'),
        [
          '--mount',
          '--propagation',
          'private',
          '--',
          resolveTrustedBinary('bash'),
          '--noprofile',
          '--norc',
          '-c',
          SETUP_SCRIPT,
          'karotte-setup',
          ...bins,
          'sweep',
          '1',
          out,
        ],
        {
          encoding: 'utf8',
          input: '',
          timeout: 30_000,
          env: {
            PATH: '/usr/bin:/bin',
            INIT: 'cat /proc/self/mountinfo > "$KAROTTE_TABLE"',
            DEVPL: '',
            KAROTTE_TABLE: table,
          },
        },
      );
      if (setup.status !== 0 || setup.stdout !== 'karotte-ready\n') {
        problems.push(
          `run ${run}: exit ${String(setup.status)}, said ${JSON.stringify(setup.stdout + setup.stderr)}`,
        );
        continue;
      }
      const violations = mountViolations(fs.readFileSync(table, 'utf8'), [out]);
      if (violations.length > 0) problems.push(`run ${run}: ${violations.join('; ')}`);
      fs.rmSync(table);
    }
    expect(problems).toEqual([]);
  }, 240_000);

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
