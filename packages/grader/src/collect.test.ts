import { createMisbehavior, SystemError } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { collectAndGrade } from './collect.js';
import type { CollectorCustody, CollectorReap, SubmissionCollector } from './collector.js';
import { createFunctionJudge } from './judges/function.js';
import { verdictSchema } from './verdict.js';

// A scripted collector: the order of calls and each phase's outcome are the test's choice.
// (The real reaper and custody are exercised in collect.integration.test.ts as root.)
function scripted(overrides: Partial<SubmissionCollector> = {}): SubmissionCollector & { calls: string[] } {
  const calls: string[] = [];
  const confirmed: CollectorReap = {
    confirmed: true,
    mechanism: 'inCohort',
    killed: 1,
    survivors: [],
    record: {},
    misbehavior: [],
  };
  const custody: CollectorCustody = {
    dir: '/nonexistent-custody',
    entries: [],
    missing: [],
    totalBytes: 0,
    misbehavior: [],
    manifest: {},
    dispose: () => {
      calls.push('dispose');
      return Promise.resolve();
    },
  };
  return {
    calls,
    reap: (...args) => {
      calls.push('reap');
      return overrides.reap ? overrides.reap(...args) : Promise.resolve(confirmed);
    },
    reclaim: (...args) => {
      calls.push('reclaim');
      return overrides.reclaim
        ? overrides.reclaim(...args)
        : Promise.resolve({ ok: true, record: {}, misbehavior: [] });
    },
    takeCustody: (...args) => {
      calls.push('custody');
      return overrides.takeCustody ? overrides.takeCustody(...args) : Promise.resolve(custody);
    },
  };
}

const student = { uid: 4000, workDir: '/nonexistent-work' };

function judgeSpy(score = 1) {
  const seen: (string | null)[] = [];
  const judge = createFunctionJudge((ctx) => {
    seen.push(ctx.submissionDir);
    return score;
  });
  return { judge, seen };
}

describe('collectAndGrade order and verdict rules', () => {
  it('reaps, reclaims, takes custody, then judges the custody copy only, and disposes of it', async () => {
    const collector = scripted();
    const { judge, seen } = judgeSpy();
    const verdict = await collectAndGrade({ student, submission: ['answer.txt'], judge, collector });
    expect(collector.calls).toEqual(['reap', 'reclaim', 'custody', 'dispose']);
    expect(seen).toEqual(['/nonexistent-custody']);
    expect(verdict).toMatchObject({ status: 'passed', score: 1 });
    expect(verdictSchema.parse(verdict)).toEqual(verdict);
  });

  it('an unconfirmed reap is UNREAPABLE: failed, score 0, nothing copied or judged', async () => {
    const collector = scripted({
      reap: () =>
        Promise.resolve({
          confirmed: false,
          mechanism: null,
          killed: 3,
          survivors: [77],
          record: {},
          misbehavior: [],
        }),
    });
    const { judge, seen } = judgeSpy();
    const verdict = await collectAndGrade({ student, submission: ['a'], judge, collector });
    expect(collector.calls).toEqual(['reap']);
    expect(seen).toEqual([]);
    expect(verdict).toMatchObject({
      status: 'failed',
      score: 0,
      misbehavior: [{ code: 'UNREAPABLE' }],
      reap: { survivors: [77] },
    });
  });

  it('custody refusals are misbehavior: failed, score 0, the judge never runs', async () => {
    const collector = scripted({
      takeCustody: () =>
        Promise.resolve({
          dir: null,
          entries: [],
          missing: [],
          totalBytes: 0,
          misbehavior: [createMisbehavior('SYMLINK', 'answer.txt is a symbolic link', 'answer.txt')],
          manifest: {},
          dispose: () => Promise.resolve(),
        }),
    });
    const { judge, seen } = judgeSpy();
    const verdict = await collectAndGrade({ student, submission: ['answer.txt'], judge, collector });
    expect(seen).toEqual([]);
    expect(verdict).toMatchObject({
      status: 'failed',
      score: 0,
      misbehavior: [{ code: 'SYMLINK', path: 'answer.txt' }],
    });
  });

  it.each(['reap', 'reclaim', 'takeCustody'] as const)(
    'a host fault in %s is error (never failed), with the phase',
    async (phase) => {
      const collector = scripted({
        [phase]: () => Promise.reject(new SystemError('EIO', { errno: 'EIO' })),
      });
      const verdict = await collectAndGrade({
        student,
        submission: ['a'],
        judge: judgeSpy().judge,
        collector,
      });
      expect(verdict).toMatchObject({
        status: 'error',
        score: 0,
        error: { code: 'SYSTEM_ERROR', phase: phase === 'takeCustody' ? 'custody' : phase },
      });
    },
  );

  it('an unexpected exception keeps the phase default code', async () => {
    const collector = scripted({ reclaim: () => Promise.reject(new TypeError('boom')) });
    const verdict = await collectAndGrade({ student, submission: ['a'], judge: judgeSpy().judge, collector });
    expect(verdict).toMatchObject({ status: 'error', error: { code: 'RECLAIM_FAILED', phase: 'reclaim' } });
  });

  it('earlier misbehavior from the episode fails the run, after the collection still ran', async () => {
    const collector = scripted();
    const { judge, seen } = judgeSpy();
    const verdict = await collectAndGrade({
      student,
      submission: ['a'],
      judge,
      collector,
      misbehavior: [createMisbehavior('PIDS_LIMIT', 'fork bomb')],
    });
    expect(collector.calls).toEqual(['reap', 'reclaim', 'custody', 'dispose']);
    expect(seen).toEqual([]);
    expect(verdict).toMatchObject({ status: 'failed', score: 0, misbehavior: [{ code: 'PIDS_LIMIT' }] });
  });

  it('an answer-only task (no declared paths) skips custody and judges with no submission directory', async () => {
    const collector = scripted();
    const { judge, seen } = judgeSpy();
    const verdict = await collectAndGrade({ student, submission: [], judge, collector, finalAnswer: '42' });
    expect(collector.calls).toEqual(['reap', 'reclaim']);
    expect(seen).toEqual([null]);
    expect(verdict).toMatchObject({ status: 'passed', custody: null });
  });

  it('keeps the custody copy when asked', async () => {
    const collector = scripted();
    await collectAndGrade({
      student,
      submission: ['a'],
      judge: judgeSpy().judge,
      collector,
      keepCustody: true,
    });
    expect(collector.calls).not.toContain('dispose');
  });

  it('refuses bad options with the field named', async () => {
    const collector = scripted();
    const judge = judgeSpy().judge;
    await expect(
      collectAndGrade({ student, submission: ['../etc/shadow'], judge, collector }),
    ).rejects.toThrow(/submission\[0\]/);
    await expect(
      collectAndGrade({ student: { uid: 0, workDir: '/w' }, submission: [], judge, collector }),
    ).rejects.toThrow(/student\.uid/);
    await expect(
      collectAndGrade({ student, submission: [], judge, collector, extra: 1 } as never),
    ).rejects.toThrow(/unknown field extra/);
  });
});
