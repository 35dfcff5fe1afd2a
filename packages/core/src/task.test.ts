import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CoreError } from './errors.js';
import { loadTask } from './task.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function taskDir(task: unknown, files: Record<string, string> = { 'grade.mjs': '' }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-task-'));
  made.push(dir);
  fs.writeFileSync(path.join(dir, 'task.json'), typeof task === 'string' ? task : JSON.stringify(task));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const valid = {
  id: 'quarterly-revenue',
  instructions: 'Compute the total.',
  submission: ['answer.txt'],
  grader: { script: 'grade.mjs', timeoutMs: 5000 },
};

async function invalid(task: unknown, files?: Record<string, string>): Promise<CoreError> {
  try {
    await loadTask(taskDir(task, files));
  } catch (error) {
    if (error instanceof CoreError) return error;
    throw error;
  }
  throw new Error('expected an invalid task');
}

describe('loadTask', () => {
  it('loads the contract single-step form', async () => {
    const dir = taskDir(valid, { 'grade.mjs': '', 'student/orders.csv': 'x', 'hidden/answer': '1' });
    const task = await loadTask(dir);
    expect(task.id).toBe('quarterly-revenue');
    expect(task.steps).toHaveLength(1);
    expect(task.steps[0]).toMatchObject({ submission: ['answer.txt'], passThreshold: 1 });
    // The judge is resolved when the task loads (its timeout is checked by a real episode in
    // episode.integration.test.ts: a grader past grader.timeoutMs fails with TIMEOUT).
    expect(task.steps[0]!.judge).toMatchObject({ kind: 'executable', name: 'executable:grade.mjs' });
    expect(task.steps[0]!.graderScript).toBe(path.join(fs.realpathSync(dir), 'grade.mjs'));
    expect(task.studentDir).toBeDefined();
    expect(task.hiddenDir).toBeDefined();
  });

  it('loads multi-step tasks', async () => {
    const task = await loadTask(
      taskDir({
        id: 'two-steps',
        passThreshold: 0.5,
        steps: [
          { instructions: 'a', submission: ['a.txt'], grader: { script: 'grade.mjs' } },
          { instructions: 'b', submission: ['b'], grader: { script: 'grade.mjs' }, passThreshold: 1 },
        ],
      }),
    );
    expect(task.steps.map((s) => s.passThreshold)).toEqual([0.5, 1]);
  });

  it.each([
    [{ ...valid, extra: 1 }, 'extra'],
    [{ ...valid, id: 'Bad_Id' }, 'id'],
    [{ ...valid, submission: ['../escape'] }, 'submission[0]'],
    [{ ...valid, submission: ['/abs'] }, 'submission[0]'],
    [{ ...valid, submission: [] }, 'submission'],
    [{ ...valid, grader: { script: 'grade.mjs', timeoutMs: -1 } }, 'grader.timeoutMs'],
    [{ ...valid, grader: { script: 'grade.mjs', timout: 1 } }, 'grader.timout'],
    [{ ...valid, passThreshold: 2 }, 'passThreshold'],
    [{ ...valid, limits: { memoryBytes: Number.NaN } }, 'limits.memoryBytes'],
    [{ ...valid, limits: { memory: 1 } }, 'limits.memory'],
    // Bounds the sandbox refused after validate had passed them (issue #13): now refused here.
    [{ ...valid, limits: { diskBytes: 4 * 1024 * 1024 } }, 'limits.diskBytes'],
    [{ ...valid, limits: { commandTimeoutMs: 7_200_000 } }, 'limits.commandTimeoutMs'],
    [{ ...valid, limits: { pids: 8 } }, 'limits.pids'],
    [{ id: 'x', submission: ['a'], grader: { script: 'grade.mjs' } }, 'instructions'],
    [{ ...valid, grader: { script: 'missing.mjs' } }, 'grader.script'],
  ])('rejects %j naming %s', async (task, field) => {
    const error = await invalid(task);
    expect(error.code).toMatch(/INVALID_TASK/);
    expect(error.field).toBe(field);
    expect(error.message).toContain(field.replace(/\[0\]$/, ''));
  });

  it('rejects invalid JSON and a grader outside the task directory', async () => {
    expect((await invalid('{nope')).field).toBe('task.json');
    const outside = await invalid({ ...valid, grader: { script: 'link.mjs' } }, {});
    expect(outside.field).toBe('grader.script');
  });

  it('rejects a grader that is a link leaving the task directory', async () => {
    const dir = taskDir({ ...valid, grader: { script: 'link.mjs' } }, {});
    fs.symlinkSync('/etc/hostname', path.join(dir, 'link.mjs'));
    await expect(loadTask(dir)).rejects.toMatchObject({ code: 'INVALID_TASK', field: 'grader.script' });
  });

  it('rejects a grader script that is not a JavaScript module as an invalid task, naming the field', async () => {
    const single = taskDir({ ...valid, grader: { script: 'grade.py' } }, { 'grade.py': 'print(1)\n' });
    await expect(loadTask(single)).rejects.toMatchObject({ code: 'INVALID_TASK', field: 'grader.script' });
    const { grader, instructions, submission, ...rest } = valid;
    expect([grader, instructions, submission]).toHaveLength(3);
    const steps = taskDir(
      { ...rest, steps: [{ instructions: 'a', submission: ['a'], grader: { script: 'grade.py' } }] },
      { 'grade.py': 'print(1)\n' },
    );
    await expect(loadTask(steps)).rejects.toMatchObject({
      code: 'INVALID_TASK',
      field: 'steps[0].grader.script',
    });
  });

  it('reports a missing task directory', async () => {
    await expect(loadTask('/nonexistent/karotte-task')).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
  });
});
