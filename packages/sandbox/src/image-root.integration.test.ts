// A student whose root is a task's image (a Debian bookworm image built here with mmdebstrap):
// every defense of the host view holds there too, and no capability survives the chroot.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testImage, testImageUnavailable } from '../../../test/support/images.js';
import { importImage } from './image/cache.js';
import { writeOciLayout } from './image/layout-writer.js';
import { tarOf } from '../test/layers.js';
import { createSandbox } from './sandbox.js';
import type { Sandbox } from './types.js';

const inCI = process.env['CI'] === 'true' || process.env['CI'] === '1';
const unavailable = testImageUnavailable();
if (unavailable !== undefined && !inCI)
  process.stderr.write(`[karotte] image-root tests skipped: ${unavailable}\n`);

let base = '';
let rootfs = '';
let box: Sandbox | undefined;
const secret = `karotte-image-secret-${process.pid}`;
let secretDir = '';

beforeAll(async () => {
  if (unavailable !== undefined && !inCI) return;
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-image-root-'));
  secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-image-hidden-'));
  fs.writeFileSync(path.join(secretDir, 'key.txt'), `${secret}\n`, { mode: 0o600 });
  // The Debian image with a layer of the test's own on top: a tool in a directory only the
  // image has, named by the image's PATH.
  const debian = await testImage('python');
  const blobs = path.join(debian, 'blobs', 'sha256');
  const debianLayer = fs
    .readdirSync(blobs)
    .map((hex) => path.join(blobs, hex))
    .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0]!;
  const extra = path.join(base, 'extra.tar');
  fs.writeFileSync(
    extra,
    tarOf([
      { path: 'opt/karotte-tools/bin/' },
      {
        path: 'opt/karotte-tools/bin/karotte-hello',
        content: '#!/bin/sh\necho hello from the image\n',
        mode: 0o755,
      },
    ]),
  );
  const layout = path.join(base, 'layout');
  await writeOciLayout({ dir: layout, layers: [debianLayer, extra] });
  const imported = await importImage(layout, { cacheDir: path.join(base, 'cache') });
  rootfs = imported.rootfs;
  box = await createSandbox({
    rootfs,
    hiddenPaths: [secretDir],
    env: { KAROTTE_FROM_TASK: '1', PATH: '/opt/karotte-tools/bin:/usr/local/bin:/usr/bin:/bin' },
  });
}, 600_000);

afterAll(async () => {
  const report = await box?.destroy();
  if (report !== undefined) expect(report.leftovers).toEqual([]);
  if (base !== '') fs.rmSync(base, { recursive: true, force: true });
  if (secretDir !== '') fs.rmSync(secretDir, { recursive: true, force: true });
});

describe.skipIf(unavailable !== undefined && !inCI)('a student in an image', () => {
  it('sees the image as its root, runs its python3, and works in its home', async () => {
    const sandbox = box!;
    expect(sandbox.networkCheck.ok).toBe(true);
    // The host has /work and /opt/karotte (this checkout, the toolchain); the image has neither.
    const view = await sandbox.exec(
      'ls -d /work /opt/karotte 2>&1; python3 -c "import sys; print(sys.version_info[:2])"; pwd; id -u; echo $KAROTTE_FROM_TASK',
    );
    expect(view.stdout).toContain("ls: cannot access '/work'");
    expect(view.stdout).toContain("ls: cannot access '/opt/karotte'");
    expect(view.stdout).toContain('(3, 11)');
    expect(view.stdout).toContain(`/home/student\n${sandbox.uid}\n1\n`);
    // The image's own PATH entry is checked inside the image (the host has no such directory).
    expect(fs.existsSync('/opt/karotte-tools')).toBe(false);
    expect((await sandbox.exec('karotte-hello; echo $PATH')).stdout).toBe(
      'hello from the image\n/opt/karotte-tools/bin:/usr/local/bin:/usr/bin:/bin\n',
    );
    const files = await sandbox.exec(
      'echo 42 > answer.txt && cat answer.txt && echo t > /tmp/t && echo s > /dev/shm/s && cat /tmp/t /dev/shm/s',
    );
    expect(files.stdout).toBe('42\nt\ns\n');
    expect(fs.readFileSync(path.join(sandbox.workDir, 'answer.txt'), 'utf8')).toBe('42\n');
    // The file tools (the host's Node.js, through its own loader and libraries bound into the
    // image) see the image: its own files, not the host's /work.
    expect(await sandbox.files.view({ path: 'answer.txt' })).toMatchObject({ ok: true });
    expect(await sandbox.files.view({ path: '/opt/karotte-tools/bin/karotte-hello' })).toMatchObject({
      ok: true,
      content: expect.stringContaining('hello from the image'),
    });
    const top = await sandbox.files.list({ path: '/' });
    expect(top).toMatchObject({ ok: true });
    expect(JSON.stringify(top)).not.toContain('"work"');
    expect(JSON.stringify(top)).toContain('"opt"');
    expect(await sandbox.files.write({ path: 'from-tool.txt', content: 'tool\n' })).toMatchObject({
      ok: true,
    });
    expect((await sandbox.exec('cat from-tool.txt')).stdout).toBe('tool\n');
  });

  it('holds no capability, cannot chroot back, and its root is read-only', async () => {
    const sandbox = box!;
    const status = await sandbox.exec('grep -E "^(Cap|NoNewPrivs|Seccomp)" /proc/self/status');
    for (const line of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
      expect(status.stdout).toMatch(new RegExp(`^${line}:\\s+0000000000000000$`, 'mu'));
    }
    expect(status.stdout).toMatch(/^NoNewPrivs:\s+1$/mu);
    expect(status.stdout).toMatch(/^Seccomp:\s+2$/mu);
    const escape = await sandbox.exec(
      'python3 -c "import os; os.chroot(\'/\')" 2>&1 | tail -1; touch /usr/bin/karotte-x 2>&1; touch /karotte-x 2>&1; mkdir /etc/karotte-x 2>&1',
    );
    expect(escape.stdout).toContain('PermissionError');
    expect(escape.stdout.match(/Read-only file system/gu)?.length).toBe(3);
    // The image's setuid binaries were stripped at import. The host's libraries bound in for
    // the file tools' Node.js keep their bits (utempter is setgid), but every mount is nosuid.
    const setuid = await sandbox.exec(
      'find / -xdev -path /karotte/host-lib -prune -o -perm /6000 -type f -print 2>/dev/null | head -5; echo end',
    );
    expect(setuid.stdout).toBe('end\n');
    const mounts = (await sandbox.exec('cat /proc/self/mountinfo')).stdout.split('\n').filter(Boolean);
    expect(mounts.length).toBeGreaterThan(5);
    for (const line of mounts) expect(line.split(' ')[5], line).toMatch(/(^|,)nosuid(,|$)/u);
    expect(mounts.some((line) => line.split(' ')[4] === '/karotte/host-lib')).toBe(true);
    // The tree on the host is unchanged by the episode.
    expect(fs.existsSync(path.join(rootfs, 'karotte-x'))).toBe(false);
  });

  it('reaches no hidden path, no host process root, no network', async () => {
    const sandbox = box!;
    const probe = await sandbox.exec(
      `cat ${secretDir}/key.txt 2>&1; ls /proc/1/root/ 2>&1 | head -1; grep -rs ${secret} /tmp /home /etc /run 2>/dev/null | head -1; echo done`,
    );
    expect(probe.stdout).not.toContain(secret);
    expect(probe.stdout).toContain('Permission denied');
    const net = await sandbox.exec('timeout 3 bash -c "exec 3<>/dev/tcp/1.1.1.1/80" 2>&1; echo rc=$?');
    expect(net.stdout).toMatch(/Network is unreachable|rc=1/u);
  });

  it('reaps every process, and a rebuilt world is in the image again', async () => {
    const sandbox = box!;
    await sandbox.exec('(sleep 300 &) ; nohup sleep 300 >/dev/null 2>&1 &');
    const record = await sandbox.reap();
    expect(record.confirmedEmpty).toBe(true);
    const next = await sandbox.exec('ls -d /work 2>&1; cat answer.txt');
    expect(next.restarted).toBe(true);
    expect(next.stdout).toContain("cannot access '/work'");
    expect(next.stdout).toContain('42');
  });
});
