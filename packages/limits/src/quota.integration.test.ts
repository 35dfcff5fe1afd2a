// Real loop-mounted ext4 quotas: a disk fill and an inode flood by a test uid stop at the
// quota with ENOSPC, and the host's free space is untouched (the image is preallocated).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import {
  asUid,
  killUid,
  runBounded,
  tempDir,
  testUid,
  tmpfsDir,
  waitFor,
} from '../../../test/support/index.js';
import { toMisbehavior } from './events.js';
import { createQuota, createQuotaPool, isMounted, loopDevicesBacking } from './quota.js';
import type { Quota, QuotaOptions } from './quota.js';

const cleanups: (() => Promise<void> | void)[] = [];
let imageDir = '';

beforeEach(() => {
  const images = tempDir('limits-img');
  imageDir = images.dir;
  // The student must traverse to its mount point (0711: no listing).
  fs.chmodSync(imageDir, 0o711);
  cleanups.push(images.cleanup);
});

afterEach(async () => {
  const errors: unknown[] = [];
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup();
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length > 0) throw errors[0];
});

async function quota(options: Omit<QuotaOptions, 'imageDir'>): Promise<Quota> {
  const created = await createQuota({ imageDir, ...options });
  cleanups.push(async () => {
    await created.remove();
  });
  return created;
}

function hostFreeBytes(dir: string): number {
  const stat = fs.statfsSync(dir);
  return stat.bavail * stat.bsize;
}

/**
 * A quota for a fresh test uid whose image lives on a private 48 MiB tmpfs that nothing else on
 * the machine writes to, so that tmpfs's free space and inodes are an exact measure of what
 * the student took from "the host". Everything is removed by the test's cleanups.
 */
async function quotaOnPrivateHost(label: string, limits: { bytes: number; inodes: number; pollMs: number }) {
  const uid = testUid();
  cleanups.push(() => killUid(uid));
  const host = tmpfsDir(label, 'size=48m,mode=0711');
  cleanups.push(host.cleanup);
  const created = await createQuota({ imageDir: host.dir, ownerUid: uid, ...limits });
  cleanups.push(async () => {
    await created.remove();
  });
  return { uid, host, created };
}

describe('disk quotas', () => {
  it('creates a preallocated, mounted ext4 quota owned by the student, and removes it completely', async () => {
    const uid = testUid();
    const created = await quota({ bytes: 32 * MiB, inodes: 512, ownerUid: uid, mode: 0o750 });
    const image = fs.statSync(created.image);
    expect(image.size).toBe(32 * MiB);
    // Not sparse: every byte of the image is allocated on the host (mkfs ran with nodiscard).
    expect(image.blocks * 512).toBeGreaterThanOrEqual(32 * MiB);
    expect(isMounted(created.path)).toBe(true);
    const root = fs.statSync(created.path);
    expect(root.uid).toBe(uid);
    expect(root.gid).toBe(uid);
    expect(root.mode & 0o7777).toBe(0o750);
    expect(fs.readdirSync(created.path)).toEqual([]);
    expect(created.limits.bytes).toBeLessThanOrEqual(32 * MiB);
    expect(created.limits.bytes).toBeGreaterThan(28 * MiB);
    expect(created.limits.inodes).toBeGreaterThanOrEqual(512);
    expect(created.contracts.disk_bytes.contract).toBe('prevented');
    expect(loopDevicesBacking(created.image)).toEqual([created.loopDevice]);
    const mountLine = fs
      .readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .find((line) => line.split(' ')[4] === created.path)!;
    expect(mountLine).toMatch(/nosuid/);
    expect(mountLine).toMatch(/nodev/);
    const record = path.join(imageDir, 'quotas', `${created.id}.json`);
    expect(fs.existsSync(record)).toBe(true);
    const removal = await created.remove();
    expect(removal).toEqual({ events: [], lazy: false });
    expect(isMounted(created.path)).toBe(false);
    expect(loopDevicesBacking(created.image)).toEqual([]);
    expect(fs.existsSync(created.image)).toBe(false);
    expect(fs.existsSync(created.path)).toBe(false);
    expect(fs.existsSync(record)).toBe(false);
  });

  it('stops a disk fill at the quota with ENOSPC while the host free space is untouched', async () => {
    const { uid, host, created } = await quotaOnPrivateHost('limits-host', {
      bytes: 32 * MiB,
      inodes: 512,
      pollMs: 20,
    });
    const imageBlocks = fs.statSync(created.image).blocks;
    expect(imageBlocks * 512).toBeGreaterThanOrEqual(32 * MiB);
    const hostBefore = hostFreeBytes(host.dir);
    const run = await runBounded(
      asUid(uid, ['/usr/bin/dd', 'if=/dev/zero', `of=${created.path}/fill`, 'bs=1M', 'count=128']),
      60_000,
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/No space left on device/);
    const written = fs.statSync(path.join(created.path, 'fill')).size;
    expect(written).toBeLessThanOrEqual(32 * MiB);
    expect(written).toBeGreaterThan(24 * MiB);
    // Not one byte more of the host: the image was preallocated and did not grow.
    expect(fs.statSync(created.image).blocks).toBe(imageBlocks);
    expect(hostFreeBytes(host.dir)).toBe(hostBefore);
    const usage = created.usage();
    expect(usage.freeBytes).toBeLessThan(MiB);
    const events = created.events();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ limit: 'disk_bytes', kind: 'full', source: 'statfs' });
    expect(toMisbehavior(events[0]!).code).toBe('DISK_LIMIT');
  });

  it('stops an inode flood at the quota with ENOSPC while the host free space and inodes are untouched', async () => {
    const { uid, host, created } = await quotaOnPrivateHost('limits-host-inodes', {
      bytes: 16 * MiB,
      inodes: 256,
      pollMs: 0,
    });
    const hostBefore = { bytes: hostFreeBytes(host.dir), inodes: fs.statfsSync(host.dir).ffree };
    const run = await runBounded(
      asUid(uid, [
        '/bin/sh',
        '-c',
        // printf, not `:`: a failed redirection of a special builtin would end the shell.
        'cd "$1" && i=0; while printf "" > "f$i"; do i=$((i+1)); done; echo "$i"',
        'flood',
        created.path,
      ]),
      60_000,
    );
    expect(run.stderr).toMatch(/No space left on device/);
    const made = Number(run.stdout.trim());
    expect(made).toBeGreaterThan(200);
    expect(made).toBeLessThanOrEqual(created.limits.inodes);
    expect(created.usage().freeInodes).toBe(0);
    // Not one byte or inode more of the host: the flood stayed inside the image.
    expect(hostFreeBytes(host.dir)).toBe(hostBefore.bytes);
    expect(fs.statfsSync(host.dir).ffree).toBe(hostBefore.inodes);
    const events = created.events();
    expect(events.map((event) => event.limit)).toContain('disk_inodes');
    // Deleting the files frees the inodes again, and the event stays recorded.
    for (const name of fs.readdirSync(created.path)) fs.rmSync(path.join(created.path, name));
    expect(created.usage().freeInodes).toBeGreaterThan(200);
    expect(created.events().map((event) => event.limit)).toContain('disk_inodes');
  });

  it('the background poll reports a fill that the student deleted again', async () => {
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    const created = await quota({ bytes: 16 * MiB, inodes: 256, ownerUid: uid, pollMs: 10 });
    // The student deletes its fill when the test says so (a trigger file outside the full
    // quota), not after a fixed delay that a stalled poll could miss on a loaded machine.
    const trigger = tempDir('limits-quota-go');
    cleanups.push(trigger.cleanup);
    fs.chmodSync(trigger.dir, 0o755);
    const go = path.join(trigger.dir, 'go');
    const run = runBounded(
      asUid(uid, [
        '/bin/sh',
        '-c',
        '/usr/bin/dd if=/dev/zero of="$1/f" bs=1M count=64 2>/dev/null; while [ ! -e "$2" ]; do sleep 0.01; done; rm -f "$1/f"',
        'fill',
        created.path,
        go,
      ]),
      60_000,
    );
    // Full, as statfs shows it here (usage() records no event; only the background poll does).
    await waitFor(() => created.usage().freeBytes < MiB, 30_000);
    // The 10 ms poll was armed before this 50 ms timer, so Node runs it (at least once, now,
    // while the quota is full) before this one: timers run in the order they expire.
    await new Promise((resolve) => setTimeout(resolve, 50));
    fs.writeFileSync(go, '');
    await run;
    expect(created.usage().freeBytes).toBeGreaterThan(8 * MiB);
    expect(created.events().map((event) => event.limit)).toEqual(['disk_bytes']);
  });

  it('removal detaches the copy another mount namespace holds of the mount, and frees the loop device', async () => {
    // A namespace made while the quota is mounted (a neighbour's sandbox, a warm pool's) copies
    // the mount; this holder keeps its copy alive, as a world's covers do, until it is killed.
    const created = await quota({ bytes: 16 * MiB, inodes: 256, ownerUid: testUid(), mode: 0o700 });
    const holder = spawn(
      '/usr/bin/unshare',
      ['--mount', '--propagation', 'private', '--', '/usr/bin/sleep', '120'],
      {
        stdio: 'ignore',
      },
    );
    cleanups.push(() => {
      holder.kill('SIGKILL');
    });
    const copies = (): string[] =>
      fs
        .readFileSync(`/proc/${holder.pid}/mountinfo`, 'utf8')
        .split('\n')
        .filter((line) => line.split(' ')[4] === created.path);
    // unshare execs sleep in the new namespace: its table is the copy.
    await waitFor(() => fs.readlinkSync(`/proc/${holder.pid}/exe`) === '/usr/bin/sleep', 5000);
    expect(copies()).toHaveLength(1);
    const device = created.loopDevice;
    await created.remove();
    // Gone from the holder's namespace too, and the loop device with it, as remove() returns.
    expect(copies()).toEqual([]);
    expect(loopDevicesBacking(created.image)).toEqual([]);
    expect(fs.existsSync(`/sys/block/${path.basename(device)}/loop/backing_file`)).toBe(false);
    expect(fs.readlinkSync(`/proc/${holder.pid}/exe`)).toBe('/usr/bin/sleep');
  });

  it('a pool prepares images ahead, hands them out, refills, and removes what it holds on close', async () => {
    const pool = createQuotaPool({ imageDir, bytes: 16 * MiB, inodes: 256, size: 2 });
    cleanups.push(() => pool.close());
    await pool.filled();
    expect(pool.lastError).toBeUndefined();
    expect(pool.available()).toBe(2);
    const uid = testUid();
    const first = await pool.acquire({ ownerUid: uid, pollMs: 0 });
    cleanups.push(async () => {
      await first.remove();
    });
    expect(fs.statSync(first.path).uid).toBe(uid);
    expect(isMounted(first.path)).toBe(true);
    expect(fs.statSync(first.image).blocks * 512).toBeGreaterThanOrEqual(16 * MiB);
    await pool.filled();
    expect(pool.available()).toBe(2);
    const held = fs.readdirSync(path.join(imageDir, 'images'));
    expect(held).toHaveLength(3);
    await first.remove();
    await pool.close();
    expect(fs.readdirSync(path.join(imageDir, 'images'))).toEqual([]);
    expect(fs.readdirSync(path.join(imageDir, 'mnt'))).toEqual([]);
    expect(fs.readdirSync(path.join(imageDir, 'quotas'))).toEqual([]);
    await expect(pool.acquire({ ownerUid: uid })).rejects.toMatchObject({ code: 'REMOVED' });
  });
});
