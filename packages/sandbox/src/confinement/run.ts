import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { childrenOf } from '../procfs.js';
import { ROOT_ENV, type World } from './world.js';

/** How much of one output stream is kept, and when it stops the program. */
export interface StreamCap {
  /** Past this many bytes the program is killed and `outputLimit` names the stream (Infinity: never). */
  readonly limitBytes: number;
  /** Bytes kept for the result. */
  readonly keepBytes: number;
  /** Which bytes are kept: the first ones or the last ones. */
  readonly keep: 'head' | 'tail';
}

/** How a one-shot program ended, in the shape of execa's result. */
export interface RunResult {
  /** The kept bytes of each stream (see {@link StreamCap}). */
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  /** Bytes each stream carried in all. */
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
  readonly aborted: boolean;
  readonly outputLimit: 'stdout' | 'stderr' | null;
  /** The program could not be started at all (spawn failed): the reason, else null. */
  readonly failed: string | null;
  /** From spawn to exit. */
  readonly durationMs: number;
  /** From the kill decision (timeout, output cap, abort) to the observed exit, or null. */
  readonly killToExitMs: number | null;
}

export interface SuperviseOptions {
  readonly timeoutMs: number;
  readonly stdout: StreamCap;
  readonly stderr: StreamCap;
  /** Written to the program's stdin, which is then closed (the child needs a stdin pipe). */
  readonly stdin?: Buffer | string | undefined;
  readonly abortSignal?: AbortSignal | undefined;
  /** Stop the program and whatever it started; called once, on timeout, output cap or abort. */
  readonly kill: () => void;
  /**
   * After the exit, how long the output pipes may take to end before the result is returned
   * without them (a descendant may hold them open). Long for the sandbox's own programs, whose
   * output must arrive whole even on a loaded host; short for a grader, whose left-behind
   * descendants must not hold the verdict.
   * @default 100
   */
  readonly drainGraceMs?: number;
}

/** Keeps the first or the last `size` bytes written to it. */
class Kept {
  private chunks: Buffer[] = [];
  private length = 0;
  constructor(
    private readonly size: number,
    private readonly keep: 'head' | 'tail',
  ) {}
  push(chunk: Buffer): void {
    if (this.keep === 'head') {
      if (this.length >= this.size) return;
      const part = chunk.subarray(0, this.size - this.length);
      this.chunks.push(part);
      this.length += part.length;
      return;
    }
    this.chunks.push(chunk);
    this.length += chunk.length;
    while (this.chunks.length > 1 && this.length - this.chunks[0]!.length >= this.size) {
      this.length -= this.chunks.shift()!.length;
    }
  }
  bytes(): Buffer {
    const all = Buffer.concat(this.chunks);
    return this.keep === 'head' ? all : all.subarray(Math.max(0, all.length - this.size));
  }
}

/** See {@link SuperviseOptions.drainGraceMs}. */
const DRAIN_GRACE_MS = 100;

/**
 * Watch a started child to its end: bounded output (kept head or tail, a kill past a cap), a
 * timeout, an abort. Resolves once the child has exited and its pipes have delivered what was
 * written before the exit (a descendant that keeps them open does not hold the result: the
 * caller kills what is left). Never rejects: a spawn failure is `failed`.
 */
export function superviseChild(child: ChildProcess, options: SuperviseOptions): Promise<RunResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const kept = {
      stdout: new Kept(options.stdout.keepBytes, options.stdout.keep),
      stderr: new Kept(options.stderr.keepBytes, options.stderr.keep),
    };
    const counts = { stdout: 0, stderr: 0 };
    let timedOut = false;
    let aborted = false;
    let outputLimit: 'stdout' | 'stderr' | null = null;
    let killedAt: number | null = null;
    let failed: string | null = null;
    let settled = false;

    const stop = (why: 'timeout' | 'abort' | 'stdout' | 'stderr'): void => {
      if (killedAt !== null) return;
      killedAt = performance.now();
      if (why === 'timeout') timedOut = true;
      else if (why === 'abort') aborted = true;
      else outputLimit = why;
      options.kill();
    };
    const timer = setTimeout(() => {
      stop('timeout');
    }, options.timeoutMs);
    const onAbort = (): void => {
      stop('abort');
    };
    options.abortSignal?.addEventListener('abort', onAbort, { once: true });
    if (options.abortSignal?.aborted === true) stop('abort');

    const watch = (name: 'stdout' | 'stderr', stream: Readable | null): void => {
      stream?.on('data', (chunk: Buffer) => {
        counts[name] += chunk.length;
        kept[name].push(chunk);
        if (counts[name] > options[name].limitBytes) stop(name);
      });
      stream?.on('error', () => undefined);
    };
    watch('stdout', child.stdout);
    watch('stderr', child.stderr);
    if (child.stdin !== null) {
      child.stdin.on('error', () => undefined);
      child.stdin.end(options.stdin ?? '');
    }

    const settle = (code: number | null, signal: NodeJS.Signals | null, exitedAt: number): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.abortSignal?.removeEventListener('abort', onAbort);
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve({
        stdout: kept.stdout.bytes(),
        stderr: kept.stderr.bytes(),
        stdoutBytes: counts.stdout,
        stderrBytes: counts.stderr,
        exitCode: code,
        signal,
        timedOut,
        aborted,
        outputLimit,
        failed,
        durationMs: exitedAt - started,
        killToExitMs: killedAt === null ? null : exitedAt - killedAt,
      });
    };
    child.on('error', (error) => {
      failed = error.message;
      // A spawn failure (ENOENT, EACCES) emits 'error' without 'exit'.
      if (child.pid === undefined) settle(null, null, performance.now());
    });
    child.on('exit', (code, signal) => {
      const exitedAt = performance.now();
      const streams = [child.stdout, child.stderr].filter(
        (stream): stream is Readable => stream !== null && !stream.readableEnded && !stream.destroyed,
      );
      if (streams.length === 0) {
        settle(code, signal, exitedAt);
        return;
      }
      let pending = streams.length;
      const grace = setTimeout(() => {
        settle(code, signal, exitedAt);
      }, options.drainGraceMs ?? DRAIN_GRACE_MS);
      for (const stream of streams) {
        onEnd(stream, () => {
          pending -= 1;
          if (pending === 0) {
            clearTimeout(grace);
            settle(code, signal, exitedAt);
          }
        });
      }
    });
  });
}

/** Call `callback` once, when `stream` ends or closes (whichever comes first). */
function onEnd(stream: Readable, callback: () => void): void {
  let fired = false;
  const once = (): void => {
    if (fired) return;
    fired = true;
    callback();
  };
  stream.once('end', once).once('close', once);
}

export interface ConfinedRunOptions {
  readonly world: World;
  /** The unprivileged uid (and gid) the program runs as. */
  readonly uid: number;
  /** argv of the program (absolute path first), started by the root launcher after setpriv. */
  readonly program: readonly string[];
  readonly stdin?: Buffer | string | undefined;
  readonly timeoutMs: number;
  readonly stdout: StreamCap;
  readonly stderr: StreamCap;
  readonly abortSignal?: AbortSignal | undefined;
  /**
   * What a timeout, an output cap or an abort kills: the program and its descendants
   * (`program`, the world lives on), or the whole world (`world`: its init, whose death makes
   * the kernel kill every process of the PID namespace).
   * @default 'program'
   */
  readonly killScope?: 'program' | 'world';
  /** See {@link SuperviseOptions.drainGraceMs}. @default 100 */
  readonly drainGraceMs?: number;
  /**
   * Run in the world's own root even when the world gives the student an image's root (a host
   * program such as the file tools' Node.js, which the image need not have).
   * @default false
   */
  readonly worldRoot?: boolean;
}

/**
 * Run one program in a world, as `uid`, to its end: the world's limits prefix, nsenter into
 * its namespaces, the root launcher (closes inherited descriptors, then setpriv drops every
 * privilege for good), the program. The one-shot launch of the student's helpers (network
 * check, file tools) and of the grader.
 */
export function runConfined(options: ConfinedRunOptions): Promise<RunResult> {
  const [file, ...args] = options.world.launchArgv(options.uid, 2, options.program, {
    worldRoot: options.worldRoot === true,
  });
  const child = spawn(file!, args, { env: ROOT_ENV, stdio: ['pipe', 'pipe', 'pipe'] });
  let fallback: NodeJS.Timeout | undefined;
  const kill = (): void => {
    if (options.killScope === 'world') {
      void options.world.stop();
      return;
    }
    let inside = 0;
    if (child.pid !== undefined) {
      for (const pid of childrenOf(child.pid)) {
        try {
          process.kill(pid, 'SIGKILL');
          inside += 1;
        } catch {
          // gone
        }
      }
    }
    // nsenter reaps what it started and exits; killed at once it would leave a zombie in the
    // namespace for the host's init. It is killed only if it does not go by itself.
    if (inside === 0) child.kill('SIGKILL');
    else fallback ??= setTimeout(() => child.kill('SIGKILL'), 1000);
  };
  return superviseChild(child, {
    timeoutMs: options.timeoutMs,
    stdout: options.stdout,
    stderr: options.stderr,
    stdin: options.stdin,
    abortSignal: options.abortSignal,
    kill,
    ...(options.drainGraceMs === undefined ? {} : { drainGraceMs: options.drainGraceMs }),
  }).finally(() => {
    clearTimeout(fallback);
  });
}

/** What one short-lived student process inside the sandbox produced. */
export interface InsideOutput {
  readonly stdout: Buffer;
  readonly stderr: string;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
  /** stdout went past `maxStdoutBytes`; the process was killed. */
  readonly overflow: boolean;
}

export interface InsideOptions {
  readonly world: World;
  readonly uid: number;
  /** argv of the program, run as the student in the sandbox (after env -i). */
  readonly program: readonly string[];
  readonly stdin: Buffer | string;
  readonly timeoutMs: number;
  readonly maxStdoutBytes: number;
  readonly abortSignal?: AbortSignal | undefined;
  /** See {@link ConfinedRunOptions.worldRoot}. @default false */
  readonly worldRoot?: boolean;
}

/** How long the output of the sandbox's own programs may trail their exit. */
const INSIDE_DRAIN_GRACE_MS = 10_000;

/** The first 16 KiB of stderr are kept; stderr never stops the program. */
const INSIDE_STDERR_BYTES = 16_384;

/**
 * Run one of the sandbox's own programs as the student (the network check, a file tool): all
 * of stdout up to `maxStdoutBytes` (past it the program is killed), the head of stderr.
 */
export async function runInside(options: InsideOptions): Promise<InsideOutput> {
  const result = await runConfined({
    world: options.world,
    uid: options.uid,
    program: options.program,
    stdin: options.stdin,
    timeoutMs: options.timeoutMs,
    stdout: { limitBytes: options.maxStdoutBytes, keepBytes: options.maxStdoutBytes, keep: 'head' },
    stderr: { limitBytes: Number.POSITIVE_INFINITY, keepBytes: INSIDE_STDERR_BYTES, keep: 'head' },
    abortSignal: options.abortSignal,
    // The sandbox's own programs start nothing that outlives them: their output is waited for
    // whole (a loaded host can deliver the end of a pipe well after the exit).
    drainGraceMs: INSIDE_DRAIN_GRACE_MS,
    worldRoot: options.worldRoot === true,
  });
  return {
    stdout: result.stdout,
    stderr: result.stderr.toString('utf8'),
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    overflow: result.outputLimit === 'stdout',
  };
}
