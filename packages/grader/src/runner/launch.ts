import { spawn } from 'node:child_process';
import {
  World,
  runConfined,
  superviseChild,
  type MountPlan,
  type RunResult,
  type SandboxBinaries,
} from '@karotte/sandbox/confinement';
import type { GraderCgroup } from './cgroup.js';

/** How to confine a launch: the student sandbox's confinement, for a fresh grader uid. */
export interface ConfinedSpec {
  readonly uid: number;
  readonly cgroup: GraderCgroup;
  /** The grader's file system (see `planMounts`): copies readable, one score mount writable. */
  readonly plan: MountPlan;
  readonly binaries: SandboxBinaries;
  /** The syscall filter of the grader and everything it starts (`buildSyscallFilter`). */
  readonly syscallFilter: Buffer;
  /** The grader's root inside the world when it runs in an image (`IMAGE_ROOT`). */
  readonly studentRoot?: string;
  /**
   * A world made ahead for this launch ({@link openWorld}): used if it still lives (else a
   * new one is made), and stopped by the launch either way.
   */
  readonly world?: World | undefined;
}

export interface LaunchOptions {
  /** Absolute interpreter path, then its arguments. */
  readonly argv: readonly [string, ...string[]];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly timeoutMs: number;
  /** Cap on each of stdout and stderr; past it the grader is killed. */
  readonly outputBytes: number;
  /** Bytes of each stream's tail kept for the report. */
  readonly tailBytes: number;
  /** Null: a plain child of the harness in its own process group (`isolation: 'process'`). */
  readonly sandbox: ConfinedSpec | null;
  readonly abortSignal: AbortSignal;
}

export interface LaunchResult {
  /** False when the launch failed before the grader program started (a host fault). */
  readonly started: boolean;
  /** What failed before the grader started. */
  readonly setupError: string | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly aborted: boolean;
  readonly outputLimit: 'stdout' | 'stderr' | null;
  readonly stdoutTail: Buffer;
  readonly stderrTail: Buffer;
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  /** From the grader's start to its exit. */
  readonly durationMs: number;
  /** From the launch to the grader's start (its world ready; 0 without one), or null. */
  readonly readyMs: number | null;
  /** From the kill decision (timeout, output cap, abort) to the observed exit, or null. */
  readonly killToExitMs: number | null;
}

/** Deadline of the sandbox setup (namespaces, mounts) before the grader starts; past it, a host fault. */
const SETUP_TIMEOUT_MS = 30_000;

/**
 * Run a grader program once and report how it ended. Never throws for anything the program
 * does; a failure before the program started is `started: false`. On a timeout, an output
 * overrun or an abort the whole process tree is killed at once (the world's PID namespace in
 * a sandbox, the process group otherwise).
 */
export function launch(options: LaunchOptions): Promise<LaunchResult> {
  return options.sandbox === null ? launchProcess(options) : launchConfined(options, options.sandbox);
}

function toLaunchResult(result: RunResult, readyMs: number): LaunchResult {
  return {
    started: result.failed === null,
    setupError: result.failed,
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    aborted: result.aborted,
    outputLimit: result.outputLimit,
    stdoutTail: result.stdout,
    stderrTail: result.stderr,
    stdoutBytes: result.stdoutBytes,
    stderrBytes: result.stderrBytes,
    durationMs: result.durationMs,
    readyMs,
    killToExitMs: result.killToExitMs,
  };
}

function notStarted(setupError: string, aborted: boolean, readyStart: number): LaunchResult {
  return {
    started: false,
    setupError,
    exitCode: null,
    signal: null,
    timedOut: false,
    aborted,
    outputLimit: null,
    stdoutTail: Buffer.alloc(0),
    stderrTail: Buffer.alloc(0),
    stdoutBytes: 0,
    stderrBytes: 0,
    durationMs: performance.now() - readyStart,
    readyMs: null,
    killToExitMs: null,
  };
}

/**
 * The world a confined grader runs in: PID, mount, IPC, UTS and network namespaces held by
 * one PID 1, the plan's mounts proven from outside, the group's limits from its first
 * instruction. Made by the launch itself, or ahead of it (a prepared judge); either way it
 * serves one launch, which stops it.
 * @returns the started world, or why it could not start (the world is then stopped).
 */
export async function openWorld(
  spec: ConfinedSpec,
  abortSignal: AbortSignal,
): Promise<{ world: World } | { failed: string; aborted: boolean }> {
  const world = new World({
    bins: spec.binaries,
    prefix: spec.cgroup.launchPrefix(),
    directives: spec.plan.directives,
    writable: spec.plan.writable,
    setupTimeoutMs: SETUP_TIMEOUT_MS,
    syscallFilter: spec.syscallFilter,
    abortSignal,
    studentRoot: spec.studentRoot,
  });
  try {
    await world.start();
    return { world };
  } catch (error) {
    await world.stop();
    return { failed: error instanceof Error ? error.message : String(error), aborted: abortSignal.aborted };
  }
}

/**
 * The grader in the student sandbox's confinement: a world (see {@link openWorld}; the one
 * made ahead when the spec holds it and it still lives), then the program launched into it
 * as the fresh uid with every privilege dropped, in a clean environment (`env -i`, so no
 * variable reaches a root process on the way). Its clock starts when the world is ready:
 * setup is the host's business, with its own deadline. After the exit the world is stopped,
 * which kills whatever the program left in its PID namespace.
 */
async function launchConfined(options: LaunchOptions, spec: ConfinedSpec): Promise<LaunchResult> {
  const launched = performance.now();
  if (options.argv[0].includes('=') || options.argv[0].startsWith('-')) {
    if (spec.world !== undefined) await spec.world.stop();
    return notStarted(`the interpreter path ${options.argv[0]} contains '='`, false, launched);
  }
  let world = spec.world;
  if (world !== undefined && !world.alive()) {
    await world.stop();
    world = undefined;
  }
  if (world === undefined) {
    const opened = await openWorld(spec, options.abortSignal);
    if ('failed' in opened) return notStarted(opened.failed, opened.aborted, launched);
    world = opened.world;
  }
  try {
    const readyMs = performance.now() - launched;
    const env = Object.entries(options.env).map(([name, value]) => `${name}=${value}`);
    const result = await runConfined({
      world,
      uid: spec.uid,
      program: [spec.binaries.env, '-i', '-C', options.cwd, ...env, ...options.argv],
      timeoutMs: options.timeoutMs,
      stdout: { limitBytes: options.outputBytes, keepBytes: options.tailBytes, keep: 'tail' },
      stderr: { limitBytes: options.outputBytes, keepBytes: options.tailBytes, keep: 'tail' },
      abortSignal: options.abortSignal,
      killScope: 'world',
    });
    return toLaunchResult(result, readyMs);
  } finally {
    await world.stop();
  }
}

/**
 * The grader as a plain child in its own process group (no root): killed by group at the
 * timeout, and whatever it left in the group killed after its exit (best effort: a
 * descendant that called setsid escapes; the sandbox has no such gap).
 */
async function launchProcess(options: LaunchOptions): Promise<LaunchResult> {
  const child = spawn(options.argv[0], options.argv.slice(1), {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const killGroup = (): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // the group is already empty
    }
  };
  child.once('exit', killGroup);
  const result = await superviseChild(child, {
    timeoutMs: options.timeoutMs,
    stdout: { limitBytes: options.outputBytes, keepBytes: options.tailBytes, keep: 'tail' },
    stderr: { limitBytes: options.outputBytes, keepBytes: options.tailBytes, keep: 'tail' },
    abortSignal: options.abortSignal,
    kill: killGroup,
  });
  return toLaunchResult(result, 0);
}
