import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '@karotte/base';
import {
  createSandboxCollector,
  networkCheckFromSandbox,
  studentFromSandbox,
  studentLimitOutcome,
} from '@karotte/grader';
import { SandboxError, createSandbox, type Sandbox } from '@karotte/sandbox';
import { CoreError } from './errors.js';
import type { WorldSpec } from './episode.js';
import type { ShellOutcome, StudentWorld } from './world.js';

/** Options of {@link createSandboxWorld} beyond the task's own limits. */
export interface SandboxWorldOptions {
  /** More host paths the student must never reach (the output directory, for instance). */
  readonly hiddenPaths?: readonly string[];
}

/**
 * The default {@link WorldFactory}: a `@karotte/sandbox` sandbox with the task's limits, the
 * task directory and the harness's paths hidden, and `student/` copied into the working
 * directory and given to the student. A host that cannot give the sandbox is a
 * `CONFINEMENT_UNAVAILABLE` error naming what is missing.
 */
export async function createSandboxWorld(
  spec: WorldSpec,
  options: SandboxWorldOptions = {},
): Promise<StudentWorld> {
  const environment = spec.task.environment;
  if (environment !== undefined && environment.rootfs === undefined) {
    throw new CoreError(
      'CONFINEMENT_UNAVAILABLE',
      `refusing to run: the task's image ${environment.image} is not imported (load the task as root)`,
    );
  }
  let sandbox: Sandbox;
  try {
    sandbox = await createSandbox({
      // The task's image as the student's root, with its environment (PATH and friends are
      // cleaned by the sandbox as always).
      ...(environment?.rootfs === undefined
        ? {}
        : { rootfs: environment.rootfs, env: { ...environment.env } }),
      // The task's limits as they are: the sandbox's limits are the same schema. No command
      // timeout: the episode gives every exec() its own.
      limits: spec.limits,
      hiddenPaths: taskHiddenPaths(spec).concat(options.hiddenPaths ?? []),
      abortSignal: spec.abortSignal,
    });
  } catch (error) {
    if (SandboxError.isInstance(error) && error.code === 'HOST_UNSUPPORTED') {
      throw new CoreError('CONFINEMENT_UNAVAILABLE', `refusing to run: ${error.message}`, { cause: error });
    }
    throw error;
  }
  try {
    if (spec.task.studentDir !== undefined) {
      await copyStudentFiles(spec.task.studentDir, sandbox.workDir, sandbox.uid, sandbox.gid);
    }
  } catch (error) {
    await sandbox.destroy().catch(() => undefined);
    throw error;
  }
  return {
    uid: sandbox.uid,
    workDir: sandbox.workDir,
    handle: studentFromSandbox(sandbox),
    network: networkCheckFromSandbox(sandbox),
    // The sandbox reaps its own student (namespace init first, then the confirmed sweep) and
    // remembers the record, so destroy() after grading does not reap again.
    collector: createSandboxCollector(sandbox),
    async exec(command, execOptions): Promise<ShellOutcome> {
      const result = await sandbox.exec(command, {
        timeoutMs: execOptions.timeoutMs,
        ...(execOptions.abortSignal === undefined ? {} : { abortSignal: execOptions.abortSignal }),
      });
      return {
        stdout: result.stdout,
        stderr: result.stderr,
        exitCode: result.exitCode,
        timedOut: result.timedOut,
        truncated: result.stdoutTruncated || result.stderrTruncated,
        stdoutBytes: result.stdoutBytes,
        stderrBytes: result.stderrBytes,
        durationMs: result.durationMs,
        ...(result.notice === undefined ? {} : { note: result.notice }),
      };
    },
    files: sandbox.files,
    async restart(): Promise<void> {
      await sandbox.restart();
    },
    async limitHits() {
      const outcome = studentLimitOutcome(await sandbox.limitEvents());
      return { hits: outcome.limitHits, misbehavior: outcome.misbehavior };
    },
    async destroy(): Promise<void> {
      const report = await sandbox.destroy();
      if (report.leftovers.length > 0) {
        throw new CoreError('TEARDOWN_INCOMPLETE', `teardown left ${report.leftovers.join(', ')}`);
      }
    },
  };
}

/**
 * Copy the task's `student/` tree into the working directory and give it to the student.
 * Runs before the student's first command, so nothing of the student's can race it; links
 * in the task's own tree are copied as links, never followed.
 */
async function copyStudentFiles(from: string, to: string, uid: number, gid: number): Promise<void> {
  try {
    for (const name of await fs.readdir(from)) {
      await fs.cp(path.join(from, name), path.join(to, name), {
        recursive: true,
        verbatimSymlinks: true,
        errorOnExist: true,
        force: false,
        preserveTimestamps: true,
      });
      await chownTree(path.join(to, name), uid, gid);
    }
  } catch (error) {
    if (isErrno(error)) {
      throw new CoreError('CONFINEMENT_UNAVAILABLE', `cannot copy student/ into the sandbox: ${error.code}`, {
        cause: error,
      });
    }
    throw error;
  }
}

async function chownTree(target: string, uid: number, gid: number): Promise<void> {
  await fs.lchown(target, uid, gid);
  const stats = await fs.lstat(target);
  if (!stats.isDirectory()) return;
  for (const name of await fs.readdir(target)) await chownTree(path.join(target, name), uid, gid);
}

/** Everything of the task the student must never reach: its directory, hidden data, graders. */
function taskHiddenPaths(spec: WorldSpec): string[] {
  const task = spec.task;
  const paths = [task.dir, task.hiddenDir, ...task.steps.map((step) => step.graderScript)];
  return [...new Set(paths.filter((p): p is string => p !== undefined))];
}
