import fs from 'node:fs/promises';
import path from 'node:path';
import { readJsonFile } from '@karotte/base';
import { createExecutableJudge, type Judge } from '@karotte/grader';
import { CoreError } from './errors.js';
import { taskFileSchema, type TaskFile, type TaskLimits } from './task-schema.js';

/** The largest task.json accepted, in bytes. */
export const MAX_TASK_FILE_BYTES = 1024 * 1024;

/** One step of a loaded task, with absolute paths resolved inside the task directory. */
export interface TaskStep {
  readonly instructions: string;
  readonly submission: readonly string[];
  /**
   * Absolute path of the grader script (a regular file inside the task directory), when the
   * step has one: hidden from the student. The step's judge already runs it.
   */
  readonly graderScript: string | undefined;
  /**
   * How the step is graded, resolved when the task is loaded: the judge given in code by
   * {@link defineTask}, or an executable judge of `grader.script` (which owns the grader's
   * timeout: `grader.timeoutMs`, else the judge's own default).
   */
  readonly judge: Judge;
  readonly passThreshold: number;
}

/** A task loaded from a directory and checked: ready to run. */
export interface Task {
  readonly id: string;
  /** Absolute, real path of the task directory; undefined for a task defined in code. */
  readonly dir: string | undefined;
  readonly steps: readonly TaskStep[];
  /** Absolute path of `student/`, copied into the working directory, when present. */
  readonly studentDir: string | undefined;
  /** Absolute path of `hidden/`, for the grader only, when present. */
  readonly hiddenDir: string | undefined;
  readonly limits: TaskLimits;
  /** The parsed task.json (undefined for a task defined in code). */
  readonly file: TaskFile | undefined;
}

/**
 * Load and validate a task directory (contract section 3). Every problem is a
 * {@link CoreError} `INVALID_TASK` (or `TASK_NOT_FOUND`) whose `field` names the offending
 * field, raised before anything runs.
 */
export async function loadTask(taskDir: string): Promise<Task> {
  let dir: string;
  try {
    dir = await fs.realpath(taskDir);
    if (!(await fs.stat(dir)).isDirectory())
      throw new CoreError('TASK_NOT_FOUND', `${taskDir} is not a directory`);
  } catch (error) {
    if (error instanceof CoreError) throw error;
    throw new CoreError('TASK_NOT_FOUND', `task directory ${taskDir} does not exist`, {
      cause: error,
      field: '--task',
    });
  }
  const file = await readTaskFile(path.join(dir, 'task.json'));
  const passThreshold = file.passThreshold ?? 1;
  const stepFiles = file.steps ?? [
    { instructions: file.instructions!, submission: file.submission!, grader: file.grader!, passThreshold },
  ];
  const steps: TaskStep[] = [];
  for (const [index, step] of stepFiles.entries()) {
    const field = file.steps === undefined ? 'grader.script' : `steps[${index}].grader.script`;
    const graderScript = await regularFileInside(dir, step.grader.script, field);
    let judge: Judge;
    try {
      judge = createExecutableJudge({
        program: graderScript,
        ...(step.grader.timeoutMs === undefined ? {} : { timeoutMs: step.grader.timeoutMs }),
      });
    } catch (error) {
      // The judge refuses what it could never run (a grader that is not a JavaScript module):
      // an invalid task, named by its field, before anything runs.
      throw new CoreError(
        'INVALID_TASK',
        `${field}: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
          field,
        },
      );
    }
    steps.push({
      instructions: step.instructions,
      submission: step.submission,
      graderScript,
      judge,
      passThreshold: step.passThreshold ?? passThreshold,
    });
  }
  return {
    id: file.id,
    dir,
    steps,
    studentDir: await optionalDirInside(dir, 'student'),
    hiddenDir: await optionalDirInside(dir, 'hidden'),
    limits: file.limits ?? {},
    file,
  };
}

async function readTaskFile(file: string): Promise<TaskFile> {
  const read = await readJsonFile(file, {
    maxBytes: MAX_TASK_FILE_BYTES,
    schema: taskFileSchema,
    what: 'task.json',
  });
  if (read.ok) return read.value;
  throw new CoreError('INVALID_TASK', read.message, { cause: read.cause, field: read.field ?? 'task.json' });
}

/** Resolve `relative` inside `dir`, requiring a regular file whose real path stays inside. */
async function regularFileInside(dir: string, relative: string, field: string): Promise<string> {
  const candidate = path.join(dir, relative);
  let real: string;
  try {
    real = await fs.realpath(candidate);
  } catch (error) {
    throw new CoreError('INVALID_TASK', `${field}: ${relative} does not exist in the task directory`, {
      cause: error,
      field,
    });
  }
  if (!real.startsWith(dir + path.sep)) {
    throw new CoreError('INVALID_TASK', `${field}: ${relative} resolves outside the task directory`, {
      field,
    });
  }
  if (!(await fs.stat(real)).isFile()) {
    throw new CoreError('INVALID_TASK', `${field}: ${relative} is not a regular file`, { field });
  }
  return real;
}

async function optionalDirInside(dir: string, name: string): Promise<string | undefined> {
  const candidate = path.join(dir, name);
  let stats;
  try {
    stats = await fs.lstat(candidate);
  } catch {
    return undefined;
  }
  if (stats.isSymbolicLink() || !stats.isDirectory()) {
    throw new CoreError('INVALID_TASK', `${name}/ must be a directory (not a link) when present`, {
      field: `${name}/`,
    });
  }
  return candidate;
}
