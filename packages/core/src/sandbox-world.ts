import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '@karotte/base';
import {
  createJudgePool,
  createSandboxCollector,
  networkCheckFromSandbox,
  studentFromSandbox,
  studentLimitOutcome,
  type JudgePoolStats,
} from '@karotte/grader';
import {
  SandboxError,
  createSandbox,
  createSandboxPool,
  type Sandbox,
  type SandboxOptions,
  type SandboxPool,
  type SandboxPoolStats,
} from '@karotte/sandbox';
import { CoreError } from './errors.js';
import type { JudgePreparer, WorldFactory, WorldSpec } from './episode.js';
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
  const sandbox = await made(() =>
    createSandbox({ ...sandboxOptionsFor(spec, options), abortSignal: spec.abortSignal }),
  );
  return worldOf(sandbox, spec);
}

/** The sandbox options of an episode's world (without its abort signal). */
function sandboxOptionsFor(spec: WorldSpec, options: SandboxWorldOptions): SandboxOptions {
  const environment = spec.task.environment;
  if (environment !== undefined && environment.rootfs === undefined) {
    throw new CoreError(
      'CONFINEMENT_UNAVAILABLE',
      `refusing to run: the task's image ${environment.image} is not imported (load the task as root)`,
    );
  }
  return {
    // The task's image as the student's root, with its environment (PATH and friends are
    // cleaned by the sandbox as always).
    ...(environment?.rootfs === undefined ? {} : { rootfs: environment.rootfs, env: { ...environment.env } }),
    // The task's limits as they are: the sandbox's limits are the same schema. No command
    // timeout: the episode gives every exec() its own.
    limits: spec.limits,
    hiddenPaths: taskHiddenPaths(spec).concat(options.hiddenPaths ?? []),
  };
}

/** `create()`, with a host that cannot give the sandbox as `CONFINEMENT_UNAVAILABLE`. */
async function made(create: () => Promise<Sandbox>): Promise<Sandbox> {
  try {
    return await create();
  } catch (error) {
    if (SandboxError.isInstance(error) && error.code === 'HOST_UNSUPPORTED') {
      throw new CoreError('CONFINEMENT_UNAVAILABLE', `refusing to run: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/** Options of {@link createSandboxWorldPool}. */
export interface SandboxWorldPoolOptions extends SandboxWorldOptions {
  /** Sandboxes kept ready per world configuration (a task's limits, image and hidden paths), and prepared judges per judge. @default 1 */
  readonly size?: number;
  /** A pooled sandbox older than this is destroyed unused. @default 600000 */
  readonly maxAgeMs?: number;
  /** Configurations kept warm at once; the one used least recently is drained past this. @default 4 */
  readonly maxConfigurations?: number;
}

/** A {@link WorldFactory} that takes its sandboxes from warm pools, and the pools' lifetime. */
export interface SandboxWorldPool {
  /** Like {@link createSandboxWorld}, but from a pool of sandboxes made ahead for the same configuration. */
  readonly createWorld: WorldFactory;
  /**
   * For an episode's `prepareJudge`: a step's judge prepared before the episode (the
   * executable judge's grader world made and started), `size` kept ready per judge
   * (`createJudgePool` of `@karotte/grader`).
   */
  readonly prepareJudge: JudgePreparer;
  /** The sandbox pools' counts, summed. */
  stats(): SandboxPoolStats;
  /** The judge pool's counts. */
  judgeStats(): JudgePoolStats;
  /** Drain every pool, the judges' too (the worlds and judges handed out are their episodes'). */
  close(): Promise<void>;
}

/**
 * Worlds from warm pools of `@karotte/sandbox` (`createSandboxPool`): one pool per world
 * configuration, made at its first episode (which itself is made cold) and kept `size` strong
 * in the background, so the episodes after it start on a sandbox that was already made and
 * verified, re-checked when handed out. Every world is a fresh sandbox, never reused.
 */
export function createSandboxWorldPool(options: SandboxWorldPoolOptions = {}): SandboxWorldPool {
  const pools = new Map<string, SandboxPool>();
  // Drains of evicted pools: their failures are kept for close(), never left unhandled.
  const closing: Promise<void>[] = [];
  const evictionFailures: unknown[] = [];
  const maxConfigurations = options.maxConfigurations ?? 4;
  let closed = false;
  const judges = createJudgePool({
    ...(options.size === undefined ? {} : { size: options.size }),
    ...(options.maxAgeMs === undefined ? {} : { maxAgeMs: options.maxAgeMs }),
  });
  const poolFor = (sandboxOptions: SandboxOptions): SandboxPool => {
    const key = JSON.stringify(sandboxOptions);
    let pool = pools.get(key);
    if (pool === undefined) {
      pool = createSandboxPool(sandboxOptions, {
        ...(options.size === undefined ? {} : { size: options.size }),
        ...(options.maxAgeMs === undefined ? {} : { maxAgeMs: options.maxAgeMs }),
      });
      while (pools.size >= maxConfigurations) {
        const [oldest, stale] = pools.entries().next().value as [string, SandboxPool];
        pools.delete(oldest);
        closing.push(
          stale.close().catch((error: unknown) => {
            evictionFailures.push(error);
          }),
        );
      }
    } else pools.delete(key);
    pools.set(key, pool); // most recently used last
    return pool;
  };
  return {
    async createWorld(spec) {
      if (closed) throw new CoreError('CONFINEMENT_UNAVAILABLE', 'the sandbox world pool was closed');
      const pool = poolFor(sandboxOptionsFor(spec, options));
      const sandbox = await made(() => pool.acquire({ abortSignal: spec.abortSignal }));
      return worldOf(sandbox, spec);
    },
    prepareJudge: (judge, prepareOptions) => judges.prepare(judge, prepareOptions),
    judgeStats: () => judges.stats(),
    stats() {
      const sum = { made: 0, warm: 0, cold: 0, discarded: 0, failed: 0, idle: 0 };
      let lastDiscard: string | null = null;
      for (const pool of pools.values()) {
        const stats = pool.stats();
        for (const key of Object.keys(sum) as (keyof typeof sum)[]) sum[key] += stats[key];
        lastDiscard = stats.lastDiscard ?? lastDiscard;
      }
      return { ...sum, lastDiscard };
    },
    async close() {
      closed = true;
      const all = [...pools.values()].map((pool) => pool.close());
      pools.clear();
      all.push(judges.close());
      const results = await Promise.allSettled([...closing, ...all]);
      for (const result of results) if (result.status === 'rejected') throw result.reason;
      if (evictionFailures.length > 0) throw evictionFailures[0];
    },
  };
}

/** The student's world on `sandbox`: `student/` copied in, then the episode's handle on it. */
async function worldOf(sandbox: Sandbox, spec: WorldSpec): Promise<StudentWorld> {
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
      try {
        await sandbox.destroy();
      } catch (error) {
        // The sandbox throws when anything of it stayed (its uid stays leased, for a later reclaim).
        if (SandboxError.isInstance(error) && error.code === 'TEARDOWN_INCOMPLETE') {
          throw new CoreError('TEARDOWN_INCOMPLETE', error.message, { cause: error });
        }
        throw error;
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
