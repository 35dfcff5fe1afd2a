import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { GraderCgroup } from './cgroup.js';
import setupScript from './programs/setup.sh?raw';

/** Trusted system binaries a sandboxed launch composes (each from resolveTrustedBinary). */
export interface SandboxBinaries {
  readonly sh: string;
  readonly unshare: string;
  readonly mount: string;
  readonly sed: string;
  readonly prlimit: string;
  readonly setpriv: string;
}

/** How to confine a launch: a fresh uid in its own namespaces and cgroup. */
interface SandboxSpec {
  readonly uid: number;
  readonly gid: number;
  readonly cgroup: GraderCgroup;
  /** The one mount that stays writable (the score tmpfs); every other mount turns read-only. */
  readonly writableMount: string;
  /** World-writable scratch places that get a private tmpfs (`/tmp`, `/var/tmp`, `/dev/shm`). */
  readonly tmpfsPaths: readonly string[];
  /** Size of each private tmpfs (its pages are charged to the grader's memory cgroup). */
  readonly tmpfsBytes: number;
  /** The grader's HOME and working directory: a private tmpfs owned by the grader's uid. */
  readonly home: string;
  /** Host directories covered by an empty read-only tmpfs (the host outside its system part). */
  readonly coverPaths: readonly string[];
  /** RLIMIT_NOFILE. */
  readonly nofile: number;
  readonly binaries: SandboxBinaries;
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
  readonly sandbox: SandboxSpec | null;
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
  /** From spawn to exit. */
  readonly durationMs: number;
  /** From spawn to the grader's start (the readiness byte in a sandbox, 0 without), or null. */
  readonly readyMs: number | null;
  /** From the kill decision (timeout, output cap, abort) to the observed exit, or null. */
  readonly killToExitMs: number | null;
}

/**
 * The script run as pid 1 of the grader's namespaces, as root, before it becomes the grader
 * (programs/setup.sh). A constant: every variable datum arrives as a positional argument.
 * Steps, in order:
 *  1. join the grader's cgroups (`echo 0` moves the writer), so every later process is
 *     limited and killable as a group;
 *  2. make every mount read-only in this mount namespace only (per-mount flags are private
 *     to the namespace), so the grader cannot write the host's disk;
 *  3. mount private tmpfs over the world-writable scratch places and over HOME, so whatever
 *     the grader writes is bounded by its memory limit and vanishes with the namespace;
 *  4. report readiness on fd 3 and close it, so only setup failures (never the grader's)
 *     can be mistaken for host faults;
 *  5. run the rest as a child and exit with its status: prlimit, setpriv to the fresh uid
 *     with no privileges, the interpreter. A grader killed by signal N exits this init with
 *     128 + N, as a shell reports it.
 */
const STAGE2: string = setupScript;

function sandboxArgv(options: LaunchOptions, sandbox: SandboxSpec): [string, string[]] {
  const b = sandbox.binaries;
  const args = [
    '--pid',
    '--fork',
    '--kill-child',
    '--mount-proc',
    '--mount',
    '--ipc',
    '--uts',
    '--net',
    '--',
    b.sh,
    '-c',
    STAGE2,
    'karotte-grader-setup',
    b.mount,
    b.sed,
    String(sandbox.cgroup.procsFiles.length),
    ...sandbox.cgroup.procsFiles,
    sandbox.writableMount,
    String(sandbox.tmpfsPaths.length),
    String(sandbox.tmpfsBytes),
    ...sandbox.tmpfsPaths,
    sandbox.home,
    String(sandbox.uid),
    String(sandbox.gid),
    String(sandbox.coverPaths.length),
    ...sandbox.coverPaths,
    b.prlimit,
    '--core=0:0',
    `--nofile=${sandbox.nofile}:${sandbox.nofile}`,
    '--',
    b.setpriv,
    `--reuid=${sandbox.uid}`,
    `--regid=${sandbox.gid}`,
    '--clear-groups',
    '--no-new-privs',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--',
    ...options.argv,
  ];
  // setpriv --pdeathsig: if the harness itself dies (SIGKILL, OOM), the kernel kills unshare,
  // whose --kill-child takes the namespace's init and with it every grader process. Not
  // trusted alone: the normal path kills the cgroup and proves it empty.
  return [b.setpriv, ['--pdeathsig', 'KILL', '--', b.unshare, ...args]];
}

/** Deadline of the sandbox setup (namespaces, mounts) before the grader starts; past it, a host fault. */
const SETUP_TIMEOUT_MS = 30_000;
/** After the exit, how long the readiness pipe may take to reach EOF (it is normally at once). */
const READINESS_EOF_MS = 5_000;

/** Keeps the last `size` bytes written to it. */
class Tail {
  private chunks: Buffer[] = [];
  private length = 0;
  constructor(private readonly size: number) {}
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.length += chunk.length;
    while (this.length - this.chunks[0]!.length >= this.size) {
      this.length -= this.chunks.shift()!.length;
    }
  }
  bytes(): Buffer {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.size));
  }
}

/**
 * Run a grader program once and report how it ended. Never throws for anything the program
 * does; a spawn failure is `started: false`. On a timeout, an output overrun or an abort the
 * whole process tree is killed at once (the cgroup in a sandbox, the process group otherwise)
 * and the result is returned as soon as the direct child has exited.
 */
export function launch(options: LaunchOptions): Promise<LaunchResult> {
  return new Promise((resolve) => {
    const started = performance.now();
    const [file, args] =
      options.sandbox === null
        ? [options.argv[0], options.argv.slice(1)]
        : sandboxArgv(options, options.sandbox);
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      // fd 3 carries the setup's readiness byte in a sandbox.
      stdio: ['ignore', 'pipe', 'pipe', options.sandbox === null ? 'ignore' : 'pipe'],
      // A new process group: the process-level kill signals the whole group.
      detached: true,
    });
    let ready = options.sandbox === null;
    let readyMs: number | null = options.sandbox === null ? 0 : null;
    let spawnError: string | null = null;
    let timedOut = false;
    let aborted = false;
    let outputLimit: 'stdout' | 'stderr' | null = null;
    let killedAt: number | null = null;
    const tails = { stdout: new Tail(options.tailBytes), stderr: new Tail(options.tailBytes) };
    const counts = { stdout: 0, stderr: 0 };

    const killTree = async (): Promise<void> => {
      if (options.sandbox !== null) {
        // The cgroup holds the namespace's init and every descendant: one atomic kill.
        await options.sandbox.cgroup.killAll().catch(() => undefined);
      }
      const pid = child.pid;
      if (pid !== undefined) {
        try {
          // Sandbox: the unshare parent (its --kill-child takes the init with it).
          // Process level: the whole process group.
          process.kill(options.sandbox === null ? -pid : pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    };
    const stop = (why: 'timeout' | 'abort' | 'setup' | 'stdout' | 'stderr'): void => {
      if (killedAt !== null) return;
      killedAt = performance.now();
      if (why === 'timeout') timedOut = true;
      else if (why === 'abort') aborted = true;
      else if (why !== 'setup') outputLimit = why;
      void killTree();
    };

    // The grader's clock starts when the grader starts: in a sandbox, at the readiness byte
    // (setup is the host's business, with its own generous deadline).
    const startClock = (): NodeJS.Timeout =>
      setTimeout(() => {
        stop('timeout');
      }, options.timeoutMs);
    let timer: NodeJS.Timeout | undefined = options.sandbox === null ? startClock() : undefined;
    const setupTimer =
      options.sandbox === null
        ? undefined
        : setTimeout(() => {
            if (!ready) stop('setup');
          }, SETUP_TIMEOUT_MS);
    const onAbort = (): void => {
      stop('abort');
    };
    options.abortSignal.addEventListener('abort', onAbort, { once: true });
    if (options.abortSignal.aborted) stop('abort');

    const watch = (name: 'stdout' | 'stderr', stream: Readable | null): void => {
      stream?.on('data', (chunk: Buffer) => {
        counts[name] += chunk.length;
        tails[name].push(chunk);
        if (counts[name] > options.outputBytes) stop(name);
      });
      stream?.on('error', () => undefined);
    };
    watch('stdout', child.stdout);
    watch('stderr', child.stderr);
    const readiness = child.stdio[3] as Readable | null | undefined;
    readiness?.on('data', (chunk: Buffer) => {
      if (ready || !chunk.includes(0x52)) return;
      ready = true;
      readyMs = performance.now() - started;
      clearTimeout(setupTimer);
      if (killedAt === null) timer = startClock();
    });
    readiness?.on('error', () => undefined);

    child.on('error', (error) => {
      spawnError = error.message;
    });
    child.on('close', () => undefined);
    child.on('exit', (code, signal) => {
      const exitedAt = performance.now();
      clearTimeout(timer);
      clearTimeout(setupTimer);
      options.abortSignal.removeEventListener('abort', onAbort);
      // Process level: whatever the grader left in its process group dies with it (best
      // effort: a descendant that called setsid escapes; the sandbox has no such gap).
      if (options.sandbox === null && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // the group is already empty
        }
      }
      // Give the pipes a moment to deliver what was written before the exit; a descendant
      // that kept them open does not hold the verdict (the group is killed by the caller).
      const finish = (): void => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        readiness?.destroy();
        resolve({
          started: ready,
          setupError: ready ? null : (spawnError ?? tails.stderr.bytes().toString('utf8')),
          exitCode: code,
          signal,
          timedOut,
          aborted,
          outputLimit,
          stdoutTail: tails.stdout.bytes(),
          stderrTail: tails.stderr.bytes(),
          stdoutBytes: counts.stdout,
          stderrBytes: counts.stderr,
          durationMs: exitedAt - started,
          readyMs,
          killToExitMs: killedAt === null ? null : exitedAt - killedAt,
        });
      };
      let pending = 2;
      const done = (): void => {
        pending -= 1;
        if (pending === 0) {
          clearTimeout(grace);
          finish();
        }
      };
      let grace: NodeJS.Timeout | undefined;
      const drainOutput = (): void => {
        grace = setTimeout(() => {
          pending = -1;
          finish();
        }, 100);
        for (const stream of [child.stdout, child.stderr]) {
          if (stream === null || stream.readableEnded || stream.destroyed) done();
          else onEnd(stream, done);
        }
      };
      // The readiness byte and the exit arrive on different channels, in no fixed order: a
      // fast grader's exit can be seen before the byte it wrote at start. Its pipe is at EOF
      // once the setup script closed it (before the grader ran) or died, so wait for that
      // end before deciding whether the grader started (never on a short grace: a loop
      // stalled by load would then call a finished grader a setup failure).
      if (
        ready ||
        readiness === null ||
        readiness === undefined ||
        readiness.readableEnded ||
        readiness.destroyed
      ) {
        drainOutput();
      } else {
        // Whichever comes first drains once (finish() destroys the pipe, which closes it).
        let drained = false;
        const drainOnce = (): void => {
          if (drained) return;
          drained = true;
          clearTimeout(deadline);
          drainOutput();
        };
        const deadline = setTimeout(drainOnce, READINESS_EOF_MS);
        onEnd(readiness, drainOnce);
      }
    });
    // A spawn failure (ENOENT, EACCES) emits 'error' without 'exit'.
    child.once('error', () => {
      if (child.pid !== undefined) return;
      clearTimeout(timer);
      clearTimeout(setupTimer);
      options.abortSignal.removeEventListener('abort', onAbort);
      resolve({
        started: false,
        setupError: spawnError,
        exitCode: null,
        signal: null,
        timedOut,
        aborted,
        outputLimit,
        stdoutTail: Buffer.alloc(0),
        stderrTail: Buffer.alloc(0),
        stdoutBytes: 0,
        stderrBytes: 0,
        durationMs: performance.now() - started,
        readyMs: null,
        killToExitMs: null,
      });
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
