import { createFunctionJudge } from '@karotte/grader';
import { describe, expect, it } from 'vitest';
import { defineTask } from './define-task.js';
import { CoreError } from './errors.js';

const judge = createFunctionJudge(() => 1);

function invalid(definition: unknown): CoreError {
  try {
    defineTask(definition as Parameters<typeof defineTask>[0]);
  } catch (error) {
    if (error instanceof CoreError) return error;
    throw error;
  }
  throw new Error('expected an invalid task');
}

describe('defineTask', () => {
  it('builds a single-step task with a judge', () => {
    const task = defineTask({
      id: 'capital',
      instructions: 'Write it.',
      submission: ['answer.txt'],
      judge,
      limits: { pids: 64 },
    });
    expect(task.steps).toHaveLength(1);
    expect(task.steps[0]).toMatchObject({
      submission: ['answer.txt'],
      passThreshold: 1,
      graderScript: undefined,
    });
    expect(task.steps[0]!.judge).toBe(judge);
    expect(task.limits).toEqual({ pids: 64 });
    expect(task.dir).toBeUndefined();
  });

  it('builds multi-step tasks', () => {
    const task = defineTask({
      id: 'two',
      passThreshold: 0.5,
      steps: [
        { instructions: 'a', submission: ['a'], judge },
        { instructions: 'b', submission: ['b'], judge, passThreshold: 1 },
      ],
    });
    expect(task.steps.map((s) => s.passThreshold)).toEqual([0.5, 1]);
  });

  it.each([
    [{ id: 'x', instructions: 'i', submission: ['a'] }, 'judge'],
    [{ id: 'x', instructions: 'i', submission: ['a'], judge: {} }, 'judge'],
    [{ id: 'x', instructions: 'i', submission: ['../a'], judge }, 'submission[0]'],
    [{ id: 'x', instructions: 'i', submission: ['a'], judge, studentDir: 'relative' }, 'studentDir'],
    [
      { id: 'x', instructions: 'i', submission: ['a'], judge, hiddenDir: '/nonexistent/karotte' },
      'hiddenDir',
    ],
    [{ id: 'x', instructions: 'i', submission: ['a'], judge, limits: { diskBytes: -5 } }, 'limits.diskBytes'],
    [{ id: 'x', instructions: 'i', submission: ['a'], judge, grader: 'grade.mjs' }, 'grader'],
    [{ id: 'x', steps: [{ instructions: 'a', submission: ['a'], judge }], judge }, 'steps'],
  ])('rejects %j naming %s', (definition, field) => {
    const error = invalid(definition);
    expect(error.code).toBe('INVALID_TASK');
    expect(error.field).toBe(field);
  });
});
