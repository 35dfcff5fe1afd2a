// A sandbox whose processes were all stopped between two commands (the grader's reap between
// the steps of a multi-step task, the OOM killer, a kill of its init) comes back on the next
// exec: same uid, same working directory with its files, same limits group. exec never throws
// for it. Every check here looks at real processes, cgroups and files.
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { reap } from '@karotte/proc-reaper';
import { createSandbox, type Sandbox } from './index.js';
import { pidsOfUid, waitFor } from '../../../test/support/index.js';

const made: Sandbox[] = [];
afterEach(async () => {
  for (const box of made.splice(0)) await box.destroy().catch(() => undefined);
});

async function sandbox(limits: { memoryBytes?: number; shmBytes?: number } = {}): Promise<Sandbox> {
  const box = await createSandbox({
    limits: { diskBytes: 16 * MiB, memoryBytes: 256 * MiB, pids: 64, ...limits },
    commandTimeoutMs: 60_000,
  });
  made.push(box);
  return box;
}

/** Host pid of the sandbox's PID 1: the member of its group that is pid 1 of its own namespace. */
async function initPidOf(box: Sandbox): Promise<number | undefined> {
  for (const pid of await box.handle.group.pids()) {
    try {
      if (/^NSpid:\s+\d+\s+1$/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))) return pid;
    } catch {
      // gone
    }
  }
  return undefined;
}

function commandOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

describe('a sandbox whose processes were all stopped', () => {
  it('after the grader’s reap (uid + limits group) the next exec rebuilds the world around the same files', async () => {
    const box = await sandbox();
    const step1 = await box.exec(
      'echo step1 > ~/answer.txt; mkdir -p ~/d && cd ~/d && export V=1; echo t > /tmp/t; sleep 300 & echo $! > ~/bg.pid',
    );
    expect(step1.exitCode).toBe(0);
    const oldInit = await initPidOf(box);
    expect(oldInit).toBeGreaterThan(1);

    // What collectAndGrade does between steps: proc-reaper with the uid and the group. The
    // group holds PID 1 of the namespace too (the launch prefix joins it before unshare).
    // Its default collector waits for the exits before custody (awaitExit): so must this.
    const record = await reap(
      { uid: box.uid, group: box.handle.group },
      { deadlineMs: 30_000, awaitExit: true },
    );
    expect(record.confirmedEmpty).toBe(true);
    expect(pidsOfUid(box.uid)).toEqual([]);
    expect(await box.handle.group.pids()).toEqual([]);

    // The old job is looked for by what it runs: its pid belonged to the old PID namespace,
    // and the new one numbers from 1 again (the new shell or its relays can hold that number).
    const step2 = await box.exec(
      'cat ~/answer.txt; pwd; echo "[${V-}]"; ls -A /tmp; ps -eo args= | grep -qx "sleep 300" && echo bg-alive; id -u; hostname',
    );
    expect(step2.stdout).toBe(`step1\n/home/student\n[]\n${box.uid}\nkarotte-${box.id.slice(3)}\n`);
    expect(step2).toMatchObject({ exitCode: 0, restarted: true });
    expect(step2.notice).toMatch(/restarted.*Files in the working directory are kept/);
    const newInit = await initPidOf(box);
    expect(newInit).toBeGreaterThan(1);
    expect(newInit).not.toBe(oldInit);
    // Same limits group: the new world's processes are members of it.
    expect((await box.handle.group.pids()).length).toBeGreaterThan(0);
    expect(box.networkCheck.ok).toBe(true);
    // The host is read-only again in the new world, the working directory writable.
    const rw = await box.exec(
      'touch /var/tmp/karotte-x 2>/dev/null && echo wrote; touch ~/ok && echo home-ok',
    );
    expect(rw).toMatchObject({ stdout: 'home-ok\n', restarted: false, notice: undefined });

    // A second reap; this time a file tool is the first to need the world.
    expect((await reap({ uid: box.uid, group: box.handle.group }, { awaitExit: true })).confirmedEmpty).toBe(
      true,
    );
    expect(await box.files.view({ path: 'answer.txt' })).toMatchObject({ ok: true, content: 'step1\n' });
    const step3 = await box.exec('echo step3 >> ~/answer.txt; cat ~/answer.txt');
    expect(step3).toMatchObject({ stdout: 'step1\nstep3\n', restarted: true });

    const report = await box.destroy();
    expect(report.leftovers).toEqual([]);
    expect(pidsOfUid(box.uid)).toEqual([]);
  });

  it('Sandbox.reap() between steps: exec rebuilds, and a later reap reaps the new world', async () => {
    const box = await sandbox();
    await box.exec('echo a > ~/f');
    const first = await box.reap();
    expect(first.confirmedEmpty).toBe(true);
    expect(await box.reap()).toBe(first); // the same record until the sandbox is used again
    expect(await box.exec('cat ~/f')).toMatchObject({ stdout: 'a\n', restarted: true });
    expect(pidsOfUid(box.uid).length).toBeGreaterThan(0);
    const second = await box.reap();
    expect(second).not.toBe(first);
    expect(second.confirmedEmpty).toBe(true);
    expect(pidsOfUid(box.uid)).toEqual([]);
  });

  it('restart() replaces a live world: background jobs, /tmp and /dev/shm go, files stay', async () => {
    const box = await sandbox();
    await box.exec('sleep 300 & echo x > /tmp/x; echo y > /dev/shm/y; echo keep > ~/keep');
    const before = pidsOfUid(box.uid);
    expect(before.length).toBeGreaterThan(0);
    const report = await box.restart();
    expect(report.networkCheck.ok).toBe(true);
    expect(box.networkCheck).toBe(report.networkCheck);
    const after = pidsOfUid(box.uid);
    for (const pid of before) expect(after).not.toContain(pid);
    const next = await box.exec('cat ~/keep; ls -A /tmp /dev/shm; jobs | wc -l');
    expect(next.stdout).toBe('keep\n/dev/shm:\n\n/tmp:\n0\n');
    expect(next.restarted).toBe(true);
  });

  it('PID 1 killed from outside in the middle of a command (what an OOM kill of it does): a result, then a rebuilt world', async () => {
    const box = await sandbox();
    await box.exec('echo keep > ~/keep');
    const init = await initPidOf(box);
    expect(init).toBeGreaterThan(1);
    const running = box.exec('sleep 60; echo never');
    await waitFor(() => pidsOfUid(box.uid).some((pid) => commandOf(pid) === 'sleep'), 30_000);
    process.kill(init!, 'SIGKILL');
    const stopped = await running;
    expect(stopped.exitCode).toBeNull();
    expect(stopped.stdout).toBe('');
    expect(stopped.notice).toMatch(/Every process of the sandbox was killed/);
    const next = await box.exec('cat ~/keep');
    expect(next).toMatchObject({ stdout: 'keep\n', exitCode: 0, restarted: true });
    expect(next.notice).toMatch(/restarted/);
  });

  it('a memory hog filling /dev/shm past the memory limit (no room left for a shell) does not wedge the episode', async () => {
    const box = await sandbox({ memoryBytes: 64 * MiB, shmBytes: 256 * MiB });
    // Read back before the hog: the kernel holds the group at 64 MiB.
    expect(box.appliedLimits.memoryBytes).toBeLessThanOrEqual(64 * MiB);
    await box.exec('echo keep > ~/keep');
    // tmpfs pages count against the group and killing processes does not free them: the OOM
    // killer takes the shell and the writer, and any later process in the group.
    const hog = await box.exec('head -c 200M /dev/zero > /dev/shm/fill; echo status=$?');
    expect(hog.stdout).not.toContain('status=0');
    expect((await box.limitEvents()).some((event) => event.limit === 'memory')).toBe(true);
    // exec never throws; within two commands the world is replaced (freeing /dev/shm).
    let next = await box.exec('cat ~/keep; ls -A /dev/shm');
    if (next.stdout !== 'keep\n') next = await box.exec('cat ~/keep; ls -A /dev/shm');
    expect(next).toMatchObject({ stdout: 'keep\n', exitCode: 0, restarted: true });
    expect(next.notice).toMatch(/restarted/);
    expect((await box.exec('echo fine')).stdout).toBe('fine\n');
  });

  it('exec after destroy() is a caller bug (DESTROYED); before that, never', async () => {
    const box = await sandbox();
    await box.reap();
    await box.destroy();
    expect(() => box.exec('true')).toThrow(expect.objectContaining({ code: 'DESTROYED' }));
    await expect(box.files.list()).rejects.toMatchObject({ code: 'DESTROYED' });
  });
});
