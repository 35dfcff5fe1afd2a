import fs from 'node:fs/promises';
import path from 'node:path';
import { readJsonFile } from '@karotte/base';
import { createExecutableJudge, type Judge } from '@karotte/grader';
import { ImageError, importImage, inspectImage } from '@karotte/sandbox/image';
import { CoreError } from './errors.js';
import { taskFileSchema, type TaskEnvironment, type TaskFile, type TaskLimits } from './task-schema.js';

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

/** A task's own root file system (`environment` of task.json), checked. */
export interface LoadedEnvironment {
  /** Absolute path of the image (layout directory or tarball). */
  readonly image: string;
  /** Its digest (the manifest's; a docker archive's config digest). */
  readonly digest: string;
  /**
   * The unpacked tree in the image cache, once imported (as root, at load): undefined when the
   * task was loaded without root, which cannot run it.
   */
  readonly rootfs: string | undefined;
  /** The image's `Env`, as variables (names that are not plain variable names are left out). */
  readonly env: Readonly<Record<string, string>>;
  /** The image's PATH, or undefined when it sets none. */
  readonly path: string | undefined;
}

/** Options of {@link loadTask}. */
export interface LoadTaskOptions {
  /** Root-owned image cache where a task's image is unpacked. @default '/var/lib/karotte/task-images' */
  readonly imageCacheDir?: string;
  /** Import (unpack) the task's image when running as root. @default true */
  readonly importImage?: boolean;
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
  /** The task's image, when task.json names one; the student's root (and a command grader's) is then the image. */
  readonly environment?: LoadedEnvironment | undefined;
}

/**
 * Load and validate a task directory (contract section 3). Every problem is a
 * {@link CoreError} `INVALID_TASK` (or `TASK_NOT_FOUND`) whose `field` names the offending
 * field, raised before anything runs.
 */
export async function loadTask(taskDir: string, options: LoadTaskOptions = {}): Promise<Task> {
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
  const environment =
    file.environment === undefined ? undefined : await loadEnvironment(dir, file.environment, options);
  const stepFiles = file.steps ?? [
    { instructions: file.instructions!, submission: file.submission!, grader: file.grader!, passThreshold },
  ];
  const steps: TaskStep[] = [];
  for (const [index, step] of stepFiles.entries()) {
    const prefix = file.steps === undefined ? 'grader' : `steps[${index}].grader`;
    const field = step.grader.command === undefined ? `${prefix}.script` : `${prefix}.command`;
    const graderScript =
      step.grader.script === undefined ? undefined : await regularFileInside(dir, step.grader.script, field);
    const timeout = step.grader.timeoutMs === undefined ? {} : { timeoutMs: step.grader.timeoutMs };
    // A grader image of its own (Karotte's extension), else the task's.
    const graderEnvironment =
      step.grader.environment === undefined
        ? environment
        : await loadEnvironment(dir, step.grader.environment, options, `${prefix}.environment`);
    let judge: Judge;
    try {
      judge =
        graderScript !== undefined
          ? createExecutableJudge({ program: graderScript, ...timeout })
          : createExecutableJudge({
              command: [...step.grader.command!],
              taskDir: dir,
              // An image kept in the task directory is not copied for the grader.
              taskDirExclude: [environment, graderEnvironment]
                .map((env) => (env === undefined ? '' : path.relative(dir, env.image).split(path.sep)[0]!))
                .filter((name) => name !== '' && name !== '..' && !path.isAbsolute(name)),
              ...(graderEnvironment?.rootfs === undefined ? {} : { rootfs: graderEnvironment.rootfs }),
              ...(graderEnvironment?.path === undefined ? {} : { searchPath: graderEnvironment.path }),
              ...timeout,
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
    environment,
  };
}

/**
 * Check the task's image: it must exist, be readable and be an image (its documents checked
 * against their digests), and have the pinned digest when one is given. As root it is then
 * imported into the cache (unpacked once, every layer checked; later loads find it there).
 * Every problem is an invalid task naming `environment.image` or `environment.digest`.
 */
async function loadEnvironment(
  dir: string,
  spec: TaskEnvironment,
  options: LoadTaskOptions,
  field = 'environment',
): Promise<LoadedEnvironment> {
  const image = path.resolve(dir, spec.image);
  const fieldOf = (error: unknown): string =>
    ImageError.isInstance(error) && error.code === 'IMAGE_DIGEST_MISMATCH' && spec.digest !== undefined
      ? `${field}.digest`
      : `${field}.image`;
  const invalid = (error: unknown): CoreError =>
    new CoreError(
      'INVALID_TASK',
      `${fieldOf(error)}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error, field: fieldOf(error) },
    );
  let source;
  try {
    source = inspectImage(image, spec.digest);
  } catch (error) {
    if (ImageError.isInstance(error) && error.kind === 'bad_argument') throw invalid(error);
    throw error;
  }
  let rootfs: string | undefined;
  if (options.importImage !== false && process.getuid?.() === 0) {
    try {
      rootfs = (
        await importImage(image, {
          ...(options.imageCacheDir === undefined ? {} : { cacheDir: options.imageCacheDir }),
          expectedDigest: source.digest,
        })
      ).rootfs;
    } catch (error) {
      if (ImageError.isInstance(error) && error.kind === 'bad_argument') throw invalid(error);
      throw error;
    }
  }
  const env: Record<string, string> = {};
  for (const entry of source.config.env) {
    const equals = entry.indexOf('=');
    const name = equals === -1 ? entry : entry.slice(0, equals);
    if (equals === -1 || !/^[A-Za-z_][A-Za-z0-9_]*$/u.test(name) || entry.length > 128 * 1024) continue;
    env[name] = entry.slice(equals + 1);
  }
  return { image, digest: source.digest, rootfs, env, path: env['PATH'] };
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
