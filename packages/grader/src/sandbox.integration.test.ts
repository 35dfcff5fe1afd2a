// The whole sequence with the student in a real @karotte/sandbox sandbox (its own uid, pid
// namespace, limits group and quota): the sandbox reaps itself, then reclaim, custody, judge.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { createSandbox } from '@karotte/sandbox';
import type { Sandbox } from '@karotte/sandbox';
import { pidsOfUid, tempDir } from '../../../test/support/index.js';
import { collectAndGrade } from './collect.js';
import type { SubmissionCollector } from './collector.js';
import { createSandboxCollector, networkCheckFromSandbox, studentFromSandbox } from './default-collector.js';
import { createExecutableJudge } from './judges/executable.js';
import { verdictSchema } from './verdict.js';

const FIXTURES = path.join(import.meta.dirname, '..', 'test', 'fixtures');
let box: Sandbox;
let hidden: { dir: string; cleanup: () => void };

beforeAll(async () => {
  hidden = tempDir('grader-sbx-hidden');
  fs.writeFileSync(path.join(hidden.dir, 'key.txt'), '42\n');
  box = await createSandbox({
    limits: {
      diskBytes: 16 * MiB,
      memoryBytes: 192 * MiB,
      pids: 96,
      tmpBytes: 8 * MiB,
      shmBytes: 4 * MiB,
    },
    commandTimeoutMs: 20_000,
  });
}, 120_000);

afterAll(async () => {
  const uid = box?.uid;
  await box?.destroy();
  if (uid !== undefined) expect(pidsOfUid(uid)).toEqual([]);
  hidden.cleanup();
});

function grade(collector: SubmissionCollector = createSandboxCollector(box)) {
  return collectAndGrade({
    student: studentFromSandbox(box),
    submission: ['answer.txt'],
    judge: createExecutableJudge({ program: path.join(FIXTURES, 'compare.mjs'), timeoutMs: 20_000 }),
    hiddenDir: hidden.dir,
    collector,
    network: networkCheckFromSandbox(box),
  });
}

describe('collectAndGrade with a @karotte/sandbox student', () => {
  it('a background writer (setsid, nohup) the student left is reaped before custody: failed, score 0', async () => {
    // The writer waits for a trigger the test drops after the reap and before custody.
    const started = await box.exec(
      "echo wrong > answer.txt; setsid nohup bash -c 'while [ ! -e go ]; do sleep 0.01; done; while :; do echo 42 > answer.txt; sleep 0.01; done' >/dev/null 2>&1 & echo started",
    );
    expect(started.stdout).toContain('started');
    expect(pidsOfUid(box.uid).length).toBeGreaterThan(0);
    const real = createSandboxCollector(box);
    const collector: SubmissionCollector = {
      ...real,
      reap: async (student, options) => {
        const result = await real.reap(student, options);
        fs.writeFileSync(path.join(box.workDir, 'go'), '');
        await new Promise((resolve) => setTimeout(resolve, 300));
        return result;
      },
    };
    const verdict = await grade(collector);
    expect(verdictSchema.parse(verdict)).toEqual(verdict);
    expect(verdict).toMatchObject({ status: 'failed', score: 0, judgeScore: 0, misbehavior: [] });
    expect(verdict.reap).toMatchObject({ confirmed: true, survivors: [] });
    expect(verdict.network).toMatchObject({ checked: true, isolated: true });
    expect(verdict.judge?.metadata['answer']).toBe('wrong');
    expect(pidsOfUid(box.uid)).toEqual([]);
    expect(fs.readFileSync(path.join(box.workDir, 'answer.txt'), 'utf8')).toBe('wrong\n');
    fs.rmSync(path.join(box.workDir, 'go'));
  });

  it('an honest answer written in the sandbox passes', async () => {
    const wrote = await box.exec('echo 42 > answer.txt');
    expect(wrote.exitCode).toBe(0);
    const verdict = await grade();
    expect(verdict).toMatchObject({ status: 'passed', score: 1, misbehavior: [], error: null });
    expect(verdict.student.uid).toBe(box.uid);
  });
});
