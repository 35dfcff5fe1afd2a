import fs from 'node:fs';
import path from 'node:path';
import { BadArgumentError, parseOptions } from '@karotte/base';
import type { Judge } from '@karotte/grader';
import { z } from 'zod';
import { CoreError } from './errors.js';
import type { Task, TaskStep } from './task.js';
import { relativePathSchema, requireOneForm, taskIdSchema, taskLimitsSchema } from './task-schema.js';

const judgeSchema = z.custom<Judge>(
  (value) => typeof value === 'object' && value !== null && typeof (value as Judge).evaluate === 'function',
  'must be a judge from @karotte/grader (createExecutableJudge, createFunctionJudge, allOf, …)',
);

const absoluteDir = z
  .string()
  .refine((p) => path.isAbsolute(p), 'must be an absolute path')
  .refine((p) => fs.existsSync(p) && fs.statSync(p).isDirectory(), 'must be an existing directory');

const definedStepSchema = z
  .object({
    instructions: z.string().min(1),
    submission: z.array(relativePathSchema).min(1).max(1000),
    /** How the step is graded: any judge of @karotte/grader, composites included. */
    judge: judgeSchema,
    passThreshold: z.number().min(0).max(1).optional(),
  })
  .strict();

/**
 * The task a TypeScript author defines: the same fields and rules as `task.json` (id, limits,
 * submission paths, pass threshold; unknown fields are an error), with judges given as
 * objects instead of a grader script path, and directories as absolute paths.
 */
export const taskDefinitionSchema = z
  .object({
    id: taskIdSchema,
    instructions: z.string().min(1).optional(),
    submission: z.array(relativePathSchema).min(1).max(1000).optional(),
    judge: judgeSchema.optional(),
    steps: z.array(definedStepSchema).min(1).max(100).optional(),
    /** Copied into the student's working directory at the start; the student owns the copies. */
    studentDir: absoluteDir.optional(),
    /** Data for the grader only; the student can never reach it. */
    hiddenDir: absoluteDir.optional(),
    /** @default 1 */
    passThreshold: z.number().min(0).max(1).optional(),
    limits: taskLimitsSchema.optional(),
  })
  .strict()
  .superRefine(requireOneForm(['instructions', 'submission', 'judge']));

export type TaskDefinition = z.input<typeof taskDefinitionSchema>;

/**
 * Define a task in TypeScript. Every problem is a {@link CoreError} `INVALID_TASK` naming the
 * field, raised here, before anything runs.
 *
 * @example
 * const task = defineTask({
 *   id: 'capital-of-france',
 *   instructions: 'Write the capital of France to answer.txt.',
 *   submission: ['answer.txt'],
 *   judge: createFunctionJudge(async ({ submissionDir }) => …),
 * });
 */
export function defineTask(definition: TaskDefinition): Task {
  let parsed: z.output<typeof taskDefinitionSchema>;
  try {
    parsed = parseOptions(taskDefinitionSchema, definition, 'task definition');
  } catch (error) {
    if (BadArgumentError.isInstance(error)) {
      throw new CoreError('INVALID_TASK', error.message, {
        cause: error,
        ...(error.field === undefined ? {} : { field: error.field }),
      });
    }
    throw error;
  }
  const passThreshold = parsed.passThreshold ?? 1;
  const steps: TaskStep[] = (
    parsed.steps ?? [
      {
        instructions: parsed.instructions!,
        submission: parsed.submission!,
        judge: parsed.judge!,
        passThreshold,
      },
    ]
  ).map((step) => ({
    instructions: step.instructions,
    submission: step.submission,
    graderScript: undefined,
    judge: step.judge,
    passThreshold: step.passThreshold ?? passThreshold,
  }));
  return {
    id: parsed.id,
    dir: undefined,
    steps,
    studentDir: parsed.studentDir,
    hiddenDir: parsed.hiddenDir,
    limits: parsed.limits ?? {},
    file: undefined,
  };
}
