import path from 'node:path';
import { MAX_COMMAND_TIMEOUT_MS, studentLimitsSchema } from '@karotte/limits';
import { z } from 'zod';

/**
 * A path relative to a base directory that cannot leave it: no absolute paths, no `..`
 * segments, no empty segments, no NUL, already normalised.
 */
export const relativePathSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(4096, 'must be at most 4096 characters')
  .refine((value) => !value.includes('\0'), 'must not contain NUL')
  .refine((value) => !path.isAbsolute(value), 'must be relative')
  .refine((value) => value.split('/').every((part) => part !== '..'), 'must not contain ".." segments')
  .refine(
    (value) => path.posix.normalize(value) === value && !value.endsWith('/') && value !== '.',
    'must be normalised (no "./", "//" or trailing "/")',
  );

const student = studentLimitsSchema.shape;

/**
 * Student limits a task may set. `memoryBytes`, `pids` and `diskBytes` are `@karotte/limits`'
 * `studentLimitsSchema` fields, with its bounds (so the sandbox takes every value this
 * accepts); an omitted one gets that schema's default when the sandbox applies it. The two
 * times are the episode's own.
 */
export const taskLimitsSchema = z
  .object({
    /** Student memory, RAM-backed files included, in bytes (at least 16 MiB). @default derived from the host */
    memoryBytes: student.memoryBytes,
    /** Student processes and threads, the sandbox's own included (16 to 4194304). @default 512 */
    pids: student.pids.unwrap().optional(),
    /** Student disk quota for the working directory, in bytes (8 MiB to 1 PiB). @default 1 GiB */
    diskBytes: student.diskBytes.unwrap().optional(),
    /** Wall time of the student's part of the episode, in milliseconds. @default DEFAULT_EPISODE_WALL_TIME_MS (1 h) */
    wallTimeMs: z
      .number()
      .int()
      .positive()
      .max(7 * 24 * 3600 * 1000)
      .optional(),
    /**
     * Default and maximum per-command timeout in the student's shell, in milliseconds, at most
     * MAX_COMMAND_TIMEOUT_MS (1 h): the bound of the sandbox's exec() too.
     * @default DEFAULT_COMMAND_TIMEOUT_MS (5 min)
     */
    commandTimeoutMs: z.number().int().positive().max(MAX_COMMAND_TIMEOUT_MS).optional(),
  })
  .strict();

export const graderSpecSchema = z
  .object({
    /** The grader, a JavaScript module run with the harness's own Node.js. Exactly one of `script` and `command`. */
    script: relativePathSchema.optional(),
    /**
     * The grader's argv instead of `script` (contract section 10), run in the grader's sandbox
     * in the task's image (or on the host view), its working directory a read-only copy of the
     * task directory without `student/` and `hidden/`: `["python3", "grade.py"]`.
     */
    command: z
      .array(
        z
          .string()
          .min(1, 'must not be empty')
          .max(4096)
          .refine((a) => !a.includes('\0'), 'must not contain NUL'),
      )
      .min(1, 'must name a program')
      .max(256)
      .optional(),
    /**
     * Karotte's extension: the image a `grader.command` runs in, when it is not the task's
     * own (`environment`); the same fields.
     */
    environment: z.lazy(() => environmentSchema).optional(),
    /** Grader wall-clock limit in milliseconds. */
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(24 * 3600 * 1000)
      .optional(),
  })
  .strict()
  .superRefine((grader, ctx) => {
    if (grader.script === undefined && grader.command === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['script'],
        message: 'is required (or grader.command, an argv such as ["python3", "grade.py"])',
      });
    } else if (grader.script !== undefined && grader.command !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['command'],
        message: 'give grader.script or grader.command, not both',
      });
    }
    if (grader.environment !== undefined && grader.command === undefined) {
      ctx.addIssue({ code: 'custom', path: ['environment'], message: 'is for a grader.command only' });
    }
  });

/**
 * The task's own root file system (contract section 10): an OCI image layout directory or an
 * OCI / docker-archive tarball, by path (absolute, or relative to the task directory), pinned
 * by digest when `digest` is given.
 */
export const environmentSchema = z
  .object({
    image: z
      .string()
      .min(1, 'must not be empty')
      .max(4096)
      .refine((value) => !value.includes('\0'), 'must not contain NUL'),
    digest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/u, 'must be sha256:<64 lowercase hex digits>')
      .optional(),
  })
  .strict();

export const taskIdSchema = z
  .string()
  .max(128)
  .regex(/^[a-z0-9][a-z0-9-]*$/, 'must match [a-z0-9][a-z0-9-]*');

/** One step of a multi-step task: its own instructions, submission and grader. */
export const taskStepSchema = z
  .object({
    instructions: z.string().min(1),
    submission: z.array(relativePathSchema).min(1).max(1000),
    grader: graderSpecSchema,
    passThreshold: z.number().min(0).max(1).optional(),
  })
  .strict();

/**
 * `task.json`, the contract's task file (section 3). Unknown fields are an error. The
 * single-step form (`instructions`, `submission`, `grader`) is the contract's; `steps` is
 * Karotte's extension for multi-step tasks, mutually exclusive with the single-step fields.
 */
export const taskFileSchema = z
  .object({
    id: taskIdSchema,
    instructions: z.string().min(1).optional(),
    submission: z.array(relativePathSchema).min(1).max(1000).optional(),
    grader: graderSpecSchema.optional(),
    steps: z.array(taskStepSchema).min(1).max(100).optional(),
    /** Score at or above which the run `passed`. @default 1 */
    passThreshold: z.number().min(0).max(1).optional(),
    limits: taskLimitsSchema.optional(),
    environment: environmentSchema.optional(),
  })
  .strict()
  .superRefine(requireOneForm(['instructions', 'submission', 'grader']));

/**
 * A task is either one step (`single` fields, all required) or `steps`, never both. Shared by
 * `task.json` and `defineTask()` so both say the same thing about the same mistake.
 */
export function requireOneForm<const K extends string>(single: readonly K[]) {
  return (task: { readonly steps?: unknown } & Partial<Record<K, unknown>>, ctx: z.RefinementCtx): void => {
    const hasSingle = single.some((key) => task[key] !== undefined);
    if (task.steps !== undefined && hasSingle) {
      ctx.addIssue({
        code: 'custom',
        path: ['steps'],
        message: `use either steps or ${single.join('/')}, not both`,
      });
    } else if (task.steps === undefined) {
      for (const key of single) {
        if (task[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'is required' });
      }
    }
  };
}

export type TaskFile = z.infer<typeof taskFileSchema>;
export type TaskLimits = z.infer<typeof taskLimitsSchema>;
export type GraderSpec = z.infer<typeof graderSpecSchema>;
export type TaskEnvironment = z.infer<typeof environmentSchema>;
export type TaskStepFile = z.infer<typeof taskStepSchema>;

/** `task.json` as JSON Schema (draft 2020-12), as published in `schema/task.schema.json`. */
export function taskJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(taskFileSchema, { target: 'draft-2020-12', unrepresentable: 'throw' }),
    $id: 'https://karotte.dev/schema/task.schema.json',
    title: 'Karotte task.json',
    description:
      'A Karotte task: either the single-step form (instructions, submission, grader) or steps. Paths are relative to the task directory (grader) or to the student working directory (submission) and may not contain ".." segments.',
  };
}
