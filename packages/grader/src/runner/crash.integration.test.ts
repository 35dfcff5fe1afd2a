// If the harness dies mid-grading (SIGKILL), no grader process may survive it: the world's
// PID 1 holds the harness's pipe, and when the harness dies the pipe ends, PID 1 returns, and
// the kernel kills every process of the namespace.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { pidsOfUid, tempDir, waitFor } from '../../../../test/support/index.js';
import { recoverLimitLeftovers } from '@karotte/limits';
import { recoverGraderLeftovers } from '../recover.js';

const DIST = path.join(import.meta.dirname, '..', '..', 'dist', 'index.js');
const HANG = path.join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'hang.mjs');

// The child harness imports the built package (the README's setup builds it first).
const HARNESS = `
import fs from 'node:fs';
import { createExecutableJudge } from ${JSON.stringify(DIST)};
const [lockDir, program] = process.argv.slice(2);
const judge = createExecutableJudge({ program, timeoutMs: 600000, uidLockDir: lockDir });
void judge.evaluate({ submissionDir: null, hiddenDir: null, finalAnswer: null, abortSignal: new AbortController().signal, path: 'x' });
const timer = setInterval(() => {
  const uids = (fs.existsSync(lockDir) ? fs.readdirSync(lockDir) : []).filter((n) => /^\\d+\\.lock$/.test(n));
  if (uids.length > 0) { process.stdout.write(parseInt(uids[0], 10) + '\\n'); clearInterval(timer); }
}, 20);
`;

it("a harness killed mid-grading takes its grader (and the grader's setsid grandchild) with it", async () => {
  expect(fs.existsSync(DIST)).toBe(true);
  const dir = tempDir('grader-crash');
  const lockDir = path.join(dir.dir, 'uids');
  let uid: number | undefined;
  try {
    const script = path.join(dir.dir, 'harness.mjs');
    fs.writeFileSync(script, HARNESS);
    const harness = spawn(process.execPath, [script, lockDir, HANG], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    harness.stdout.on('data', (chunk: Buffer) => {
      uid ??= Number(chunk.toString().split('\n')[0]);
    });
    // The grader and its grandchild are both up.
    await waitFor(() => uid !== undefined && pidsOfUid(uid).length >= 2, 30_000);
    harness.kill('SIGKILL');
    // Bounded, with room for a loaded machine: the grader's side notices the harness's death
    // and the kills still have to be scheduled.
    await waitFor(() => pidsOfUid(uid!).length === 0, 15_000);
    expect(pidsOfUid(uid!)).toEqual([]);

    // What the dead harness left (its cgroup, score tmpfs, private directory, uid lock) is
    // freed by recovery at the next start, and only that.
    const mine = `karotte-grade-${uid}-`;
    expect(fs.readFileSync('/proc/self/mountinfo', 'utf8')).toContain(mine);
    const report = await recoverGraderLeftovers({ uidLockDir: lockDir });
    expect(report.failed).toEqual([]);
    expect(report.recovered).toHaveLength(1);
    expect(report.recovered[0]).toMatchObject({ uid });
    expect(report.recovered[0]!.cgroups.length).toBeGreaterThanOrEqual(2);
    expect(report.recovered[0]!.unmounted).toHaveLength(1);
    expect(report.recovered[0]!.removed).toHaveLength(1);
    expect(fs.readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(mine);
    for (const dir of report.recovered[0]!.cgroups) expect(fs.existsSync(dir)).toBe(false);
    expect(fs.readdirSync('/var/lib/karotte/grader').filter((n) => n.startsWith(mine))).toEqual([]);
    expect(fs.readdirSync(lockDir)).toEqual([]);
    // The group's owner record belongs to @karotte/limits, whose own recovery frees it.
    await recoverLimitLeftovers();
    expect(
      fs.readdirSync('/run/karotte/groups').filter((n) => n.startsWith(`karotte-grader-${uid}-`)),
    ).toEqual([]);
    // A second pass finds nothing to do.
    expect(await recoverGraderLeftovers({ uidLockDir: lockDir })).toEqual({
      recovered: [],
      alive: 0,
      failed: [],
    });
  } finally {
    // Last resort for a failing run: kill what is left by uid (test-owned, from the lock).
    if (uid !== undefined) for (const pid of pidsOfUid(uid)) process.kill(pid, 'SIGKILL');
    await recoverGraderLeftovers({ uidLockDir: lockDir }).catch(() => undefined);
    dir.cleanup();
  }
});

// A harness holding a prepared judge (its grader world started, waiting for the episode's
// inputs) that dies leaves what a harness killed mid-grading leaves, and recovery frees it.
const PREPARED_HARNESS = `
import fs from 'node:fs';
import { createExecutableJudge, prepareJudge } from ${JSON.stringify(DIST)};
const [lockDir, program] = process.argv.slice(2);
const judge = createExecutableJudge({ program, timeoutMs: 600000, uidLockDir: lockDir });
await prepareJudge(judge);
const uids = fs.readdirSync(lockDir).filter((n) => /^\\d+\\.lock$/.test(n));
process.stdout.write(parseInt(uids[0], 10) + '\\n');
setInterval(() => {}, 1000);
`;

it("a harness killed while it holds a prepared judge takes the judge's world with it, and recovery frees the rest", async () => {
  expect(fs.existsSync(DIST)).toBe(true);
  const dir = tempDir('grader-crash-prepared');
  const lockDir = path.join(dir.dir, 'uids');
  let uid: number | undefined;
  try {
    const script = path.join(dir.dir, 'harness.mjs');
    fs.writeFileSync(script, PREPARED_HARNESS);
    const harness = spawn(process.execPath, [script, lockDir, HANG], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    harness.stdout.on('data', (chunk: Buffer) => {
      uid ??= Number(chunk.toString().split('\n')[0]);
    });
    await waitFor(() => uid !== undefined, 30_000);
    const mine = `karotte-grade-${uid}-`;
    // The world's PID 1 waits in the grader's memory cgroup.
    const groups = fs
      .readdirSync('/sys/fs/cgroup/memory', { recursive: true, encoding: 'utf8' })
      .filter((n) => path.basename(n).startsWith(`karotte-grader-${uid}-`))
      .map((n) => path.join('/sys/fs/cgroup/memory', n));
    expect(groups).toHaveLength(1);
    const procs = (): string[] =>
      fs.existsSync(groups[0]!)
        ? fs.readFileSync(path.join(groups[0]!, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)
        : [];
    expect(procs().length).toBeGreaterThan(0);
    harness.kill('SIGKILL');
    await waitFor(() => procs().length === 0, 15_000);
    expect(procs()).toEqual([]);

    expect(fs.readFileSync('/proc/self/mountinfo', 'utf8')).toContain(mine);
    const report = await recoverGraderLeftovers({ uidLockDir: lockDir });
    expect(report.failed).toEqual([]);
    expect(report.recovered).toHaveLength(1);
    expect(report.recovered[0]).toMatchObject({ uid });
    expect(report.recovered[0]!.unmounted).toHaveLength(1);
    expect(report.recovered[0]!.removed).toHaveLength(1);
    expect(fs.readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(mine);
    for (const cgroup of report.recovered[0]!.cgroups) expect(fs.existsSync(cgroup)).toBe(false);
    expect(fs.existsSync(groups[0]!)).toBe(false);
    expect(fs.readdirSync(lockDir)).toEqual([]);
    await recoverLimitLeftovers();
  } finally {
    await recoverGraderLeftovers({ uidLockDir: lockDir }).catch(() => undefined);
    dir.cleanup();
  }
});
