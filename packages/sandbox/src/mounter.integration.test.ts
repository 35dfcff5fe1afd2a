// The setup's mounter (programs/mount.pl): every mount of the setup is one mount(2) call of a
// perl coprocess instead of one mount(8) process each. Run here as the sandbox runs the setup
// script (root, a fresh private mount namespace, so nothing reaches the host), with an init
// that writes the final mount table: each directive's flags and data as the kernel shows them,
// and a mount that fails as the setup's fault with the kernel's reason.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMountInfo, resolveTrustedBinary } from '@karotte/base';
import { MOUNT_PROGRAM, SETUP_SCRIPT } from './confinement/scripts.js';
import { tmpfsDir } from '../../../test/support/index.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

/** Run the setup script with `directives` in a private mount namespace; the table init saw. */
function setup(directives: readonly string[]): {
  status: number | null;
  stdout: string;
  stderr: string;
  table: string;
} {
  const { dir, cleanup } = tmpfsDir('mounter', 'size=4m,nosuid,nodev');
  cleanups.push(cleanup);
  const table = path.join(dir, 'table');
  const bins = ['ip', 'sh', 'cat', 'perl'].map((name) => resolveTrustedBinary(name));
  const run = spawnSync(
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
      ...directives.map((d) => d.replaceAll('@', dir)),
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
  return {
    status: run.status,
    stdout: run.stdout,
    stderr: run.stderr,
    table: fs.existsSync(table) ? fs.readFileSync(table, 'utf8') : '',
  };
}

function mountAt(table: string, mountPoint: string) {
  return parseMountInfo(table)
    .entries.filter((m) => m.mountPoint === mountPoint)
    .at(-1);
}

describe('the setup mounter', () => {
  it('mounts a tmpfs with its flags and data, binds read-only, remounts, and ends with the setup', () => {
    const base = tmpfsDir('mounter-base', 'size=1m');
    cleanups.push(base.cleanup);
    for (const name of ['t', 'b', 'c']) fs.mkdirSync(path.join(base.dir, name));
    fs.writeFileSync(path.join(base.dir, 'empty'), '');
    fs.writeFileSync(path.join(base.dir, 'secret'), 'x');
    const d = base.dir;
    const result = setup([
      'tmpfs',
      `${d}/t`,
      'size=1048576,mode=0711,uid=4242,nosuid,nodev',
      'bind',
      `${d}/t`,
      `${d}/b`,
      'ro,nosuid,nodev,noexec',
      'remount',
      `${d}/t`,
      'ro,nosuid,nodev',
      'cover',
      `${d}/c`,
      `${d}/empty`,
      'cover',
      `${d}/secret`,
      `${d}/empty`,
    ]);
    expect(result.stderr).toBe('');
    expect(result).toMatchObject({ status: 0, stdout: 'karotte-ready\n' });
    const tmpfs = mountAt(result.table, `${d}/t`)!;
    expect(tmpfs.fsType).toBe('tmpfs');
    expect(tmpfs.options).toEqual(expect.arrayContaining(['ro', 'nosuid', 'nodev']));
    expect(tmpfs.superOptions).toEqual(expect.arrayContaining(['size=1024k', 'mode=711', 'uid=4242']));
    const bound = mountAt(result.table, `${d}/b`)!;
    expect(bound.options).toEqual(expect.arrayContaining(['ro', 'nosuid', 'nodev', 'noexec']));
    const cover = mountAt(result.table, `${d}/c`)!;
    expect(cover.fsType).toBe('tmpfs');
    expect(cover.options).toEqual(expect.arrayContaining(['ro', 'nosuid', 'nodev', 'noexec']));
    expect(cover.superOptions).toEqual(expect.arrayContaining(['mode=000', 'nr_inodes=1']));
    const file = mountAt(result.table, `${d}/secret`)!;
    expect(file.options).toEqual(expect.arrayContaining(['ro', 'nosuid', 'nodev', 'noexec']));
    // Nothing of it reached the host: the namespace was private and is gone.
    expect(fs.readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(`${d}/t `);
  });

  it("a mount the kernel refuses fails the setup with the kernel's reason, before karotte-ready", () => {
    const base = tmpfsDir('mounter-fail', 'size=1m');
    cleanups.push(base.cleanup);
    fs.mkdirSync(path.join(base.dir, 'b'));
    const result = setup(['bind', '/nonexistent-karotte-source', `${base.dir}/b`, 'ro']);
    expect(result.status).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('karotte-setup: error: mount');
    expect(result.stderr).toContain('No such file or directory');
    expect(result.stderr).toContain(`cannot bind /nonexistent-karotte-source at ${base.dir}/b (ro)`);
    expect(result.table).toBe('');
  });
});
