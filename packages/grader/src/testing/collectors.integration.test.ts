// The project's own collectors through the conformance suite a contributor's collector runs
// (`@karotte/grader/testing`): the default collector (proc-reaper and file-guard, a student
// made of a fresh test uid and setpriv), and the sandbox's (a real @karotte/sandbox student).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import process from 'node:process';
import { expect } from 'vitest';
import { MiB } from '@karotte/base';
import { createSandbox } from '@karotte/sandbox';
import { asUid, killUid, pidsOfUid, tempDir, testUid, waitFor } from '../../../../test/support/index.js';
import { V1TestGroup } from '../../../proc-reaper/test/fixtures.js';
import { createDefaultCollector, createSandboxCollector, studentFromSandbox } from '../default-collector.js';
import { testCollector } from './index.js';
import type { CollectorSubject, UnkillableProcess } from './index.js';

const inCI = process.env['CI'] === 'true' || process.env['CI'] === '1';
const hasV1Freezer = fs.existsSync('/sys/fs/cgroup/freezer/cgroup.procs');
// A host capability, skipped by name outside CI only (CONTRIBUTING.md, Tests).
const noFreezer =
  !hasV1Freezer && !inCI
    ? 'this host has no cgroup v1 freezer to hold a process SIGKILL cannot finish'
    : undefined;
if (noFreezer !== undefined)
  process.stderr.write(`[karotte] skipped the unconfirmed-reap case: ${noFreezer}\n`);

const SLEEP_IN_BACKGROUND = 'sleep 1000 </dev/null >/dev/null 2>&1 &';

/** Run `script` as `uid` in `dir` (no groups, no new privileges, a plain PATH); background jobs outlive it. */
function runAs(uid: number, dir: string, script: string): Promise<void> {
  const [setpriv, ...argv] = asUid(uid, ['/bin/sh', '-c', script]);
  const result = spawnSync(setpriv!, argv, {
    cwd: dir,
    stdio: 'ignore',
    env: { PATH: '/usr/bin:/bin', HOME: dir },
    timeout: 20_000,
  });
  if (result.status !== 0) {
    return Promise.reject(new Error(`the student's script exited ${String(result.status)}: ${script}`));
  }
  return Promise.resolve();
}

/** The pid of the one `sleep` of `uid`, once it runs. */
async function sleepOf(uid: number): Promise<number> {
  const find = () =>
    pidsOfUid(uid).find((pid) => {
      try {
        return fs.readFileSync(`/proc/${String(pid)}/comm`, 'utf8') === 'sleep\n';
      } catch {
        return false;
      }
    });
  await waitFor(() => find() !== undefined, 10_000);
  return find()!;
}

/**
 * Start one `sleep` of the student with `start`, move it into a cgroup v1 freezer group of the
 * test's own and freeze it there: SIGKILL stays pending until it is thawed.
 */
async function frozenSleep(uid: number, start: () => Promise<void>): Promise<UnkillableProcess> {
  await start();
  const pid = await sleepOf(uid);
  const group = V1TestGroup.create('collector-conformance');
  try {
    fs.writeFileSync(`${group.freezerDir}/cgroup.procs`, String(pid));
    const state = `${group.freezerDir}/freezer.state`;
    fs.writeFileSync(state, 'FROZEN');
    await waitFor(() => fs.readFileSync(state, 'utf8').trim() === 'FROZEN', 5_000);
  } catch (error) {
    await group.destroy();
    throw error;
  }
  return {
    release: async () => {
      // Thawed, the SIGKILL the reap left pending lands; destroy() kills the rest and
      // removes the group.
      await group.destroy();
      await waitFor(() => !pidsOfUid(uid).includes(pid), 10_000);
    },
  };
}

testCollector(
  'createDefaultCollector()',
  (): Promise<CollectorSubject> => {
    const uid = testUid();
    const work = tempDir('collector-conformance');
    fs.chownSync(work.dir, uid, uid);
    fs.chmodSync(work.dir, 0o755);
    return Promise.resolve({
      // A short deadline: the unconfirmed case waits for it; honest reaps confirm in ms.
      collector: createDefaultCollector({ reap: { deadlineMs: 3000 } }),
      student: { uid, workDir: work.dir },
      run: (script) => runAs(uid, work.dir, script),
      ...(hasV1Freezer
        ? { startUnkillable: () => frozenSleep(uid, () => runAs(uid, work.dir, SLEEP_IN_BACKGROUND)) }
        : {}),
      cleanup: async () => {
        await killUid(uid);
        work.cleanup();
      },
    });
  },
  noFreezer === undefined ? {} : { skip: { unkillableProcess: noFreezer } },
);

testCollector(
  'createSandboxCollector(sandbox)',
  async (): Promise<CollectorSubject> => {
    const box = await createSandbox({
      limits: { diskBytes: 16 * MiB, memoryBytes: 192 * MiB, pids: 96 },
      commandTimeoutMs: 20_000,
      // The unconfirmed case waits for it; honest reaps confirm at once.
      reapDeadlineMs: 3000,
    });
    const run = async (script: string): Promise<void> => {
      const result = await box.exec(script);
      if (result.exitCode !== 0) {
        throw new Error(`the student's script exited ${String(result.exitCode)}: ${result.stderr}`);
      }
    };
    return {
      collector: createSandboxCollector(box),
      student: studentFromSandbox(box),
      run,
      ...(hasV1Freezer
        ? { startUnkillable: () => frozenSleep(box.uid, () => run(SLEEP_IN_BACKGROUND)) }
        : {}),
      cleanup: async () => {
        const uid = box.uid;
        await box.destroy();
        expect(pidsOfUid(uid)).toEqual([]);
      },
    };
  },
  noFreezer === undefined ? {} : { skip: { unkillableProcess: noFreezer } },
);
