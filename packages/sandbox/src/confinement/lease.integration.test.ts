import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { allocateLease, listLeaseFiles } from './lease.js';
import { createSandbox, type Sandbox } from '../index.js';
import { tempDir } from '../../../../test/support/index.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('identity leases', () => {
  it('are exclusive across allocators and a dead owner’s lease is reclaimed before reuse', async () => {
    const { dir, cleanup } = tempDir('sandbox-state');
    cleanups.push(cleanup);
    fs.chmodSync(dir, 0o700);
    const reclaimed: number[] = [];
    const options = {
      lockDir: dir,
      firstUid: 2_999_000_000,
      count: 2,
      reclaim: (_r: unknown, uid: number) => {
        reclaimed.push(uid);
        return Promise.resolve();
      },
    };
    const a = await allocateLease({ ...options, sandboxId: 'sb-a' });
    const b = await allocateLease({ ...options, sandboxId: 'sb-b' });
    expect(a.uid).not.toBe(b.uid);
    await expect(allocateLease({ ...options, sandboxId: 'sb-c' })).rejects.toMatchObject({
      code: 'NO_FREE_IDENTITY',
    });
    // Forge a lease owned by a process that has exited: it is stale and reclaimed on the next start.
    const dead = spawn('/bin/true');
    await new Promise((resolve) => dead.on('exit', resolve));
    const file = a.lockPath;
    const record = JSON.parse(fs.readFileSync(file, 'utf8'));
    fs.writeFileSync(file, JSON.stringify({ ...record, ownerPid: dead.pid }));
    expect(listLeaseFiles(dir).find((lease) => lease.uid === a.uid)?.stale).toBe(true);
    const c = await allocateLease({ ...options, sandboxId: 'sb-c' });
    expect(c.uid).toBe(a.uid);
    expect(reclaimed).toEqual([a.uid]);
    b.release();
    c.release();
    expect(listLeaseFiles(dir)).toEqual([]);
  });
});

describe('subordinate id ranges', () => {
  it('a uid that owns or lies in a subordinate range is never handed out', async () => {
    const { dir, cleanup } = tempDir('sandbox-state');
    cleanups.push(cleanup);
    fs.chmodSync(dir, 0o700);
    // The host's own /etc/subuid is not touched: the allocator reads these files instead.
    const first = 2_999_200_000;
    fs.writeFileSync(path.join(dir, 'subuid'), `# comment\nalice:${first}:2\n${first + 2}:100000:65536\n`);
    fs.writeFileSync(path.join(dir, 'subgid'), `bob:${first + 3}:1\n`);
    const options = {
      lockDir: path.join(dir, 'state', 'uids'),
      firstUid: first,
      count: 5,
      reclaim: () => Promise.resolve(),
      subordinateIdFiles: [path.join(dir, 'subuid'), path.join(dir, 'subgid'), path.join(dir, 'missing')],
    };
    // first, first+1: in alice's range; first+2: owns a range; first+3: in bob's gid range.
    const lease = await allocateLease({ ...options, sandboxId: 'sb-a' });
    expect(lease.uid).toBe(first + 4);
    await expect(allocateLease({ ...options, sandboxId: 'sb-b' })).rejects.toMatchObject({
      code: 'NO_FREE_IDENTITY',
    });
    lease.release();
  });
});

describe('identity lock files', () => {
  it('appear whole (a record from the start); an unreadable one is taken over only when old', async () => {
    const { dir, cleanup } = tempDir('sandbox-state');
    cleanups.push(cleanup);
    fs.chmodSync(dir, 0o700);
    const options = {
      lockDir: dir,
      firstUid: 2_999_100_000,
      count: 1,
      reclaim: () => Promise.resolve(),
    };
    const lease = await allocateLease({ ...options, sandboxId: 'sb-a' });
    expect(JSON.parse(fs.readFileSync(lease.lockPath, 'utf8'))).toMatchObject({
      uid: lease.uid,
      sandboxId: 'sb-a',
    });
    expect(fs.readdirSync(path.dirname(lease.lockPath))).toEqual([path.basename(lease.lockPath)]);
    // A torn lock (a crash of an older writer): young, it may be a live writer, so it is kept.
    fs.writeFileSync(lease.lockPath, '{"uid":');
    await expect(allocateLease({ ...options, sandboxId: 'sb-b' })).rejects.toMatchObject({
      code: 'NO_FREE_IDENTITY',
    });
    // Old enough that no writer can still be at it: reclaimed and handed out again.
    const old = new Date(Date.now() - 120_000);
    fs.utimesSync(lease.lockPath, old, old);
    const again = await allocateLease({ ...options, sandboxId: 'sb-c' });
    expect(again.uid).toBe(lease.uid);
    again.release();
    expect(fs.readdirSync(path.dirname(lease.lockPath))).toEqual([]);
  });
});

describe('network allow-list', () => {
  it('reaches only the allowed address, tested against a host in a namespace the test made', async () => {
    const ns = `karotte-test-${process.pid}`;
    execFileSync('/usr/sbin/ip', ['netns', 'add', ns]);
    cleanups.push(() => {
      execFileSync('/usr/sbin/ip', ['netns', 'del', ns]);
    });
    execFileSync('/usr/sbin/ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    execFileSync('/usr/sbin/ip', ['-n', ns, 'addr', 'add', '10.213.0.1/32', 'dev', 'lo']);
    // A test host: a one-shot TCP echo listener inside the test namespace.
    const server = spawn(
      '/usr/sbin/ip',
      [
        'netns',
        'exec',
        ns,
        process.execPath,
        '-e',
        "const net=require('net');let n=0;for(const p of [8080,9090])net.createServer((c)=>{c.end('karotte-allowed-'+p+'\\n')}).listen(p,'10.213.0.1',()=>{if(++n===2)console.log('up')})",
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    cleanups.push(() => {
      server.kill('SIGKILL');
    });
    await new Promise((resolve) => server.stdout.once('data', resolve));
    const box: Sandbox = await createSandbox({
      limits: { diskBytes: 8 * MiB, memoryBytes: 128 * MiB },
      network: { mode: 'allowList', allow: [{ address: '10.213.0.1', port: 8080 }], peerNetns: ns },
    });
    cleanups.push(async () => {
      await box.destroy().catch(() => undefined);
    });
    expect(box.networkCheck.ok).toBe(true);
    expect(box.networkCheck.probes.find((probe) => probe.label === 'allowed')).toMatchObject({
      observed: 'reachable',
    });
    const reached = await box.exec(
      'exec 3<>/dev/tcp/10.213.0.1/8080 && cat <&3; exec 4<>/dev/tcp/10.213.0.2/8080 || echo other-unreachable',
    );
    expect(reached.stdout).toBe('karotte-allowed-8080\nother-unreachable\n');
    // Addresses are enforced, ports are not (no firewall): another port of the allowed address
    // is reachable too, as the README says.
    expect((await box.exec('exec 5<>/dev/tcp/10.213.0.1/9090 && cat <&5')).stdout).toBe(
      'karotte-allowed-9090\n',
    );
    // After a reap between steps the rebuilt world gets its veth and its check again.
    await box.reap();
    const again = await box.exec('exec 3<>/dev/tcp/10.213.0.1/8080 && cat <&3');
    expect(again).toMatchObject({ stdout: 'karotte-allowed-8080\n', restarted: true });
    expect(box.networkCheck.ok).toBe(true);
    expect(box.networkCheck.probes.filter((probe) => probe.observed === 'reachable')).toEqual([
      expect.objectContaining({ label: 'allowed', address: '10.213.0.1' }),
    ]);
    const hostEnd = `kvh${box.id.replace(/[^a-z0-9]/g, '').slice(-8)}`;
    await box.destroy();
    expect(() =>
      execFileSync('/usr/sbin/ip', ['-n', ns, 'link', 'show', hostEnd], { stdio: 'ignore' }),
    ).toThrow();
  });
});
