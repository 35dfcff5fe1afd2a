// Sandbox setup in a mount storm: host mounts detached and made again in a tight loop while
// setup reads the mount table. Quiet project (alone, after every other test): the storm
// disturbs every mount namespace on the host, other tests' sandboxes included.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveTrustedBinary } from '@karotte/base';
import { mountViolations } from './confinement/mounts.js';
import { MOUNT_PROGRAM, SETUP_SCRIPT } from './confinement/scripts.js';
import { mountsUnder, tmpfsDir } from '../../../test/support/index.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

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

describe('setup in a mount storm', () => {
  it('reads the mount table whole while mounts vanish under it: 150 sweeps, each proving every mount read-only', async () => {
    // What broke: bash's `while read ... < mountinfo` seeks back after each line, the kernel
    // renders the table again to that offset, and a mount detached meanwhile shifts it into
    // another line. A lost line was a mount left writable; a cut one, a bad array subscript,
    // on which bash abandoned the rest of setup and still printed karotte-ready.
    const base = fs.mkdtempSync('/var/tmp/karotte-storm-');
    const stop = `${base}.stop`;
    // Where init writes the tables: a mount of its own, which the sweep is told to leave writable.
    const { dir: out, cleanup: removeOut } = tmpfsDir('storm-out', 'size=16m,nosuid,nodev');
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
      removeOut();
      fs.rmSync(stop, { force: true });
      expect(mountsUnder(base)).toEqual([]);
    });
    const deadline = Date.now() + 10_000;
    while (mountsUnder(base).length < 30 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    // The storm is up: every one of its mounts was made at least once.
    expect(mountsUnder(base).length).toBeGreaterThanOrEqual(20);
    const bins = ['ip', 'sh', 'cat', 'perl'].map((name) => resolveTrustedBinary(name));
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
            MOUNTPL: MOUNT_PROGRAM,
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
});
