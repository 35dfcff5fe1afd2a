// Many episodes at once, and crash recovery: a child node process creates a group and a
// quota (and starts a student process inside the group), is SIGKILLed, and the next start
// reclaims everything it left, while a live owner's resources and forged records are untouched.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { identityOf, MiB } from '@karotte/base';
import { rawText } from '../../../scripts/tsup-raw-text.mjs';
import { asUid, killUid, tempDir, testUid, waitFor } from '../../../test/support/index.js';
import { createEpisodeLimits } from './episode.js';
import type { EpisodeLimits } from './episode.js';
import { createGroup } from './group.js';
import { createQuotaPool, isMounted, loopDevicesBacking } from './quota.js';
import { recoverLimitLeftovers } from './recover.js';

const cleanups: (() => Promise<void> | void)[] = [];
let stateDir = '';
let imageDir = '';

beforeEach(() => {
  const state = tempDir('limits-state');
  const images = tempDir('limits-img');
  stateDir = state.dir;
  imageDir = images.dir;
  cleanups.push(state.cleanup, images.cleanup);
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

describe('episodes', () => {
  it('16 episodes create and remove their groups and quotas in parallel without collisions', async () => {
    const pool = createQuotaPool({ imageDir, bytes: 16 * MiB, inodes: 256, size: 4 });
    cleanups.push(() => pool.close());
    await pool.filled();
    const uids = Array.from({ length: 16 }, () => testUid());
    const episodes: EpisodeLimits[] = [];
    cleanups.push(async () => {
      await Promise.allSettled(episodes.map((episode) => episode.remove()));
    });
    const created = await Promise.all(
      uids.map((uid, index) =>
        createEpisodeLimits({
          group: { stateDir, memoryBytes: 64 * MiB, pids: 32 },
          quota: {
            ownerUid: uid,
            pollMs: 0,
            ...(index % 2 === 0 ? {} : { imageDir, bytes: 16 * MiB, inodes: 256 }),
          },
          ...(index % 2 === 0 ? { quotaPool: pool } : {}),
        }),
      ),
    );
    episodes.push(...created);
    const names = new Set(created.map((episode) => episode.group.name));
    const loops = new Set(created.map((episode) => episode.quota!.loopDevice));
    const mounts = new Set(created.map((episode) => episode.quota!.path));
    expect(names.size).toBe(16);
    expect(loops.size).toBe(16);
    expect(mounts.size).toBe(16);
    created.forEach((episode, index) => {
      expect(episode.group.limits.memoryBytes).toBe(64 * MiB);
      expect(episode.group.limits.pids).toBe(32);
      for (const dir of episode.group.dirs) expect(fs.existsSync(dir)).toBe(true);
      expect(isMounted(episode.quota!.path)).toBe(true);
      expect(fs.statSync(episode.quota!.path).uid).toBe(uids[index]);
    });
    const removals = await Promise.all(created.map((episode) => episode.remove()));
    expect(removals.every((removal) => removal.events.length === 0)).toBe(true);
    for (const episode of created) {
      for (const dir of episode.group.dirs) expect(fs.existsSync(dir)).toBe(false);
      expect(isMounted(episode.quota!.path)).toBe(false);
      expect(loopDevicesBacking(episode.quota!.image)).toEqual([]);
      expect(fs.existsSync(episode.quota!.image)).toBe(false);
    }
    expect(fs.readdirSync(path.join(stateDir, 'groups'))).toEqual([]);
    await pool.close();
    expect(fs.readdirSync(path.join(imageDir, 'quotas'))).toEqual([]);
    expect(fs.readdirSync(path.join(imageDir, 'images'))).toEqual([]);
  });

  it('a member left holding a quota file open: remove() takes the group first, then the quota unmounts cleanly', async () => {
    const uid = testUid();
    const episode = await createEpisodeLimits({
      group: { stateDir, memoryBytes: 64 * MiB, pids: 32 },
      quota: { ownerUid: uid, imageDir, pollMs: 0, bytes: 16 * MiB, inodes: 256 },
    });
    cleanups.push(async () => {
      await killUid(uid);
      await episode.remove().catch(() => undefined);
    });
    const quota = episode.quota!;
    // Inside the group, as the uid, with a file of the quota open and its cwd there.
    const child = spawn(
      episode.group.launchPrefix()[0]!,
      [
        ...episode.group.launchPrefix().slice(1),
        ...asUid(uid, ['/bin/sh', '-c', 'exec 3>held; echo ready; exec sleep 600']),
      ],
      { cwd: quota.path, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const exited = new Promise((resolve) => child.on('exit', resolve));
    await new Promise<void>((resolve) => {
      child.stdout.once('data', () => {
        resolve();
      });
    });
    expect(await episode.group.pids()).toContain(child.pid);
    await episode.remove();
    await exited;
    for (const dir of episode.group.dirs) expect(fs.existsSync(dir)).toBe(false);
    expect(isMounted(quota.path)).toBe(false);
    // Not a lazy unmount: the device went with it, the member's file was closed first.
    expect(loopDevicesBacking(quota.image)).toEqual([]);
    expect(fs.existsSync(quota.image)).toBe(false);
  });

  it('a failed half is rolled back: a bad quota leaves no group behind', async () => {
    const name = `karotte-test-${process.pid}-rollback`;
    // An image directory writable by others is refused (its records could be forged).
    const open = tempDir('limits-open');
    cleanups.push(open.cleanup);
    fs.chmodSync(open.dir, 0o777);
    await expect(
      createEpisodeLimits({
        group: { stateDir, name, memoryBytes: 64 * MiB },
        quota: { ownerUid: testUid(), imageDir: open.dir, bytes: 16 * MiB, inodes: 256 },
      }),
    ).rejects.toMatchObject({ code: 'UNSAFE_STATE_DIR' });
    expect(fs.readdirSync(path.join(stateDir, 'groups'))).toEqual([]);
    expect(fs.readdirSync(open.dir)).toEqual([]);
  });
});

/** Bundle the package source with a child entry into one .mjs that plain node can run. */
async function bundleChild(dir: string): Promise<string> {
  const outfile = path.join(dir, 'creator.mjs');
  const source = path.join(import.meta.dirname, 'index.ts');
  await build({
    stdin: {
      contents: `
        import { spawn } from 'node:child_process';
        import { createGroup, createQuota } from ${JSON.stringify(source)};
        const [stateDir, imageDir, name, uid] = process.argv.slice(2);
        const group = await createGroup({ stateDir, name, memoryBytes: 64 * 1024 * 1024, pids: 32 });
        const quota = await createQuota({ imageDir, bytes: 16 * 1024 * 1024, inodes: 256, ownerUid: Number(uid), pollMs: 0 });
        const student = spawn(group.launchPrefix()[0], [...group.launchPrefix().slice(1),
          '/usr/bin/setpriv', '--reuid', uid, '--regid', uid, '--clear-groups', '--', '/bin/sleep', '600'],
          { detached: true, stdio: 'ignore' });
        student.unref();
        while ((await group.pids()).length === 0) await new Promise((r) => setTimeout(r, 10));
        process.stdout.write(JSON.stringify({ dirs: group.dirs, image: quota.image, mount: quota.path,
          loop: quota.loopDevice, student: student.pid }) + '\\n');
        setInterval(() => {}, 1000);
      `,
      resolveDir: import.meta.dirname,
      loader: 'ts',
      sourcefile: 'creator.ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    outfile,
    alias: { '@karotte/base': path.join(import.meta.dirname, '..', '..', 'base', 'src', 'index.ts') },
    // The package's programs (`./programs/x.sh?raw`), inlined as its own build does.
    plugins: [rawText()],
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    logLevel: 'silent',
  });
  return outfile;
}

interface ChildReport {
  dirs: string[];
  image: string;
  mount: string;
  loop: string;
  student: number;
}

describe('crash recovery', () => {
  it("reclaims a SIGKILLed creator's group, student, quota, mount, loop device and image", async () => {
    const work = tempDir('limits-child');
    cleanups.push(work.cleanup);
    fs.chmodSync(imageDir, 0o711);
    const creator = await bundleChild(work.dir);
    const uid = testUid();
    cleanups.push(() => killUid(uid));
    const name = `karotte-test-${process.pid}-crash`;
    const child = spawn(process.execPath, [creator, stateDir, imageDir, name, String(uid)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const report = await new Promise<ChildReport>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`creator did not report in time: ${stderr}`));
      }, 30_000);
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) {
          clearTimeout(timer);
          resolve(JSON.parse(out.split('\n')[0]!) as ChildReport);
        }
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`creator exited ${String(code)}: ${stderr}`));
      });
    });
    // A safety net for this test only: whatever happens, remove what the child made.
    cleanups.push(async () => {
      await recoverLimitLeftovers({ stateDir, imageDir });
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await exited;

    // Everything is still there: the creator never cleaned up.
    for (const dir of report.dirs) expect(fs.existsSync(dir)).toBe(true);
    expect(isMounted(report.mount)).toBe(true);
    expect(loopDevicesBacking(report.image)).toEqual([report.loop]);
    expect(identityOf(report.student)).not.toBeUndefined();

    // A live owner's group in the same state directory must be left alone.
    const live = await createGroup({ stateDir, name: `${name}-live`, memoryBytes: 64 * MiB });
    cleanups.push(async () => {
      await live.remove();
    });
    // A forged record for a dead owner naming a directory that is not a cgroup is refused.
    const decoy = tempDir('limits-decoy');
    cleanups.push(decoy.cleanup);
    const decoyDir = path.join(decoy.dir, 'karotte-not-a-cgroup');
    fs.mkdirSync(decoyDir);
    fs.writeFileSync(
      path.join(stateDir, 'groups', 'karotte-forged.json'),
      JSON.stringify({
        kind: 'group',
        format: 1,
        name: 'karotte-forged',
        owner: { pid: 999_999_999, startTicks: 1, bootId: 'x' },
        createdAtMs: 1,
        cgroupVersion: 1,
        dirs: [decoyDir],
      }),
    );

    const recovery = await recoverLimitLeftovers({ stateDir, imageDir });
    expect(recovery.reclaimed.map((item) => item.kind).sort()).toEqual(['group', 'quota']);
    expect(recovery.reclaimed.find((item) => item.kind === 'group')).toMatchObject({
      id: name,
      ownerPid: child.pid,
      killedPids: 1,
    });
    expect(recovery.alive).toBe(1);
    expect(recovery.failed.map((item) => item.id)).toEqual(['karotte-forged']);

    for (const dir of report.dirs) expect(fs.existsSync(dir)).toBe(false);
    expect(isMounted(report.mount)).toBe(false);
    expect(loopDevicesBacking(report.image)).toEqual([]);
    expect(fs.existsSync(report.image)).toBe(false);
    expect(fs.existsSync(report.mount)).toBe(false);
    await waitFor(() => identityOf(report.student) === undefined, 10_000);
    // Untouched: the live group and the decoy directory.
    for (const dir of live.dirs) expect(fs.existsSync(dir)).toBe(true);
    expect(fs.existsSync(decoyDir)).toBe(true);
    // A second recovery finds nothing more to do.
    const again = await recoverLimitLeftovers({ stateDir, imageDir });
    expect(again.reclaimed).toEqual([]);
  });
});
