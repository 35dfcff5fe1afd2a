// runProgram(): run a trusted program to its end, bounded in time and output, without forking
// the harness.
//
// Why: Node.js starts a child with fork() then exec() (libuv), on the event loop. fork() copies
// the page tables of the whole process, so its cost grows with the harness's memory: measured
// here, 2 ms from a 50 MiB process, 8 ms from 150 MiB, 14 ms from 350 MiB, every one of them
// time the event loop stands still (bench/base/spawn.mjs). An episode starts a dozen such
// programs (mkfs, mount, umount, the reaper's helper, the IPC sweep). So the harness hands them
// to the spawner: one small Perl process (programs/spawner.pl, a few MiB), started once per
// harness process, that forks and execs for it and sends back how each ended and what it
// printed. Where Perl is not in the trusted directories, the harness spawns them itself. A Perl
// program of the project (`perl -e source` with that same perl) runs in the spawner's fork,
// without an exec: a new interpreter costs about 3 ms, a fork of this one a fraction of that.
//
// What the program gets is the same either way: exactly the given environment, the given
// working directory, stdin /dev/null, stdout and stderr pipes, signal dispositions at their
// defaults and no signal blocked, the harness's cgroup, uid and limits. The spawner also closes
// every other descriptor, even one the harness inherited without close-on-exec; spawning
// directly, Node.js closes those it opened itself.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { BadArgumentError, SystemError } from '../errors.js';
import { resolveTrustedBinary } from '../trusted-binary.js';
import spawnerProgram from './programs/spawner.pl?raw';

/** How {@link runProgram} runs one program. */
export interface RunProgramOptions {
  /** The program's whole environment (nothing is inherited). @default {} */
  readonly env?: Readonly<Record<string, string>>;
  /** Its working directory. @default '/' */
  readonly cwd?: string;
  /** Killed (SIGKILL) after this long. */
  readonly timeoutMs: number;
  /** Bytes kept of stdout, and of stderr; more is counted, not kept. @default 1 MiB */
  readonly maxOutputBytes?: number;
  /** Past `maxOutputBytes` on either stream: keep running (`'truncate'`) or kill it. @default 'truncate' */
  readonly onOverflow?: 'truncate' | 'kill';
  /**
   * A session and process group of its own: a kill (timeout, abort, overflow) takes the whole
   * group, and the result waits until every process of it has closed stdout and stderr (a
   * script's running step is never left behind). Otherwise a kill takes the program alone.
   * @default false
   */
  readonly processGroup?: boolean;
  /**
   * After a kill, settle this long after it even if the output is still held open (then
   * `abandoned: true`). Without it, the result waits for the output to close.
   */
  readonly killGraceMs?: number;
  /** Aborting kills it, like a timeout (`stopped: 'aborted'`). */
  readonly abortSignal?: AbortSignal | undefined;
}

/** How one program ended, and what it printed. */
export interface ProgramResult {
  /** Its exit status; null when a signal ended it (or when abandoned). */
  readonly exitCode: number | null;
  /** The signal that ended it; null when it exited (or when abandoned). */
  readonly signal: NodeJS.Signals | null;
  /** The first `maxOutputBytes` of stdout. */
  readonly stdout: Buffer;
  /** The first `maxOutputBytes` of stderr. */
  readonly stderr: Buffer;
  /** Bytes it wrote to stdout, kept or not. */
  readonly stdoutBytes: number;
  /** Bytes it wrote to stderr, kept or not. */
  readonly stderrBytes: number;
  /** Why it was killed; undefined when it ended by itself. */
  readonly stopped: 'timed out' | 'aborted' | 'output too large' | undefined;
  /** `killGraceMs` passed after the kill before it was seen to end. */
  readonly abandoned: boolean;
}

/** Whose processes {@link killAsUid} kills, and how many times it calls kill(-1). */
export interface KillAsUidTarget {
  /** The uid it becomes (never 0). */
  readonly uid: number;
  /** The gid it becomes (never 0). */
  readonly gid: number;
  /** kill(-1) calls, 1 to 10,000 (it stops at one that fails). */
  readonly rounds: number;
}

/** How {@link killAsUid} is bounded: as {@link runProgram}, with no program to give anything to. */
export type KillAsUidOptions = Pick<
  RunProgramOptions,
  'timeoutMs' | 'maxOutputBytes' | 'killGraceMs' | 'abortSignal'
>;

/** Runs programs: through a spawner process, or (no Perl) by spawning them itself. */
export interface Spawner {
  /** `'spawner'` (a Perl process forks) or `'direct'` (this process does). */
  readonly mode: 'spawner' | 'direct';
  run(argv: readonly string[], options: RunProgramOptions): Promise<ProgramResult>;
  /** See {@link killAsUid}; in direct mode it rejects (errno `ENOSYS`). */
  killAsUid(target: KillAsUidTarget, options: KillAsUidOptions): Promise<ProgramResult>;
  /** The spawner process's pid while it runs (undefined in direct mode or before the first run). */
  pid(): number | undefined;
  /** Ends the spawner process once its programs are done (they are killed). */
  close(): Promise<void>;
}

const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/** Signal number to name; the first name of a number wins (SIGABRT, not its alias SIGIOT). */
const SIGNAL_NAMES = new Map<number, NodeJS.Signals>();
for (const [name, number] of Object.entries(constants.signals)) {
  if (!SIGNAL_NAMES.has(number)) SIGNAL_NAMES.set(number, name as NodeJS.Signals);
}

/**
 * Run `argv` (an absolute path first: resolve it with `resolveTrustedBinary`) to its end.
 * Resolves with how it ended, whatever its exit status; a kill is `stopped`.
 * @throws SystemError (with the errno) when it could not start: no such file, no permission,
 *   no process left to fork.
 * @throws BadArgumentError for an argv, cwd or env the kernel could not take.
 */
export function runProgram(argv: readonly string[], options: RunProgramOptions): Promise<ProgramResult> {
  shared ??= createSpawner();
  return shared.run(argv, options);
}

/**
 * Kill every process `uid` may signal, from inside the uid: a fork of the spawner process, which
 * runs no program, becomes `uid` and `gid` (real, effective and saved; no supplementary group, no
 * capability, not dumpable, so a process of the uid can neither ptrace it nor read its memory)
 * and calls kill(-1, SIGKILL) `rounds` times (it stops at a call that fails: kill(-1) fails only
 * when no other process exists). The kernel delivers each kill(-1) under its tasklist lock, so
 * a process that forks cannot slip past one.
 *
 * Resolves as {@link runProgram} does: stdout is the number of calls that succeeded and a
 * newline, exit 0; exit 125 and a line on stderr when it could not become the uid. A
 * process of the uid can stop or kill it: `timeoutMs` bounds the wait, and root kills it then.
 * @throws SystemError (errno `ENOSYS`) without a spawner process (no trusted `perl`); (errno
 *   `EAGAIN`) when no process could be forked.
 * @throws BadArgumentError for uid or gid 0 (kill(-1) as root takes the whole host), a rounds
 *   count out of range, a bad bound.
 */
export function killAsUid(target: KillAsUidTarget, options: KillAsUidOptions): Promise<ProgramResult> {
  shared ??= createSpawner();
  return shared.killAsUid(target, options);
}

let shared: Spawner | undefined;

/**
 * A spawner of its own (tests, a harness that wants to end it): `perl: null` spawns directly.
 * @default perl the trusted `perl`, when there is one
 */
export function createSpawner(options: { perl?: string | null } = {}): Spawner {
  let perl = options.perl;
  if (perl === undefined) {
    try {
      perl = resolveTrustedBinary('perl');
    } catch {
      perl = null;
    }
  }
  return perl === null ? directSpawner() : perlSpawner(perl);
}

interface Validated {
  readonly file: string;
  readonly argv: readonly string[];
  readonly env: readonly string[];
  readonly cwd: string;
  readonly maxOutputBytes: number;
}

const MAX_ID = 0xfffffffe; // (uid_t)-1 means "unchanged" to the kernel

function validateKill(target: KillAsUidTarget, options: KillAsUidOptions): number {
  for (const field of ['uid', 'gid'] as const) {
    const value = target[field];
    if (!Number.isInteger(value) || value < 1 || value > MAX_ID) {
      throw new BadArgumentError(
        `${field} must be an integer from 1 to ${MAX_ID} (kill(-1) as root takes the whole host)`,
        { field },
      );
    }
  }
  if (!Number.isInteger(target.rounds) || target.rounds < 1 || target.rounds > 10_000) {
    throw new BadArgumentError('rounds must be an integer from 1 to 10000', { field: 'rounds' });
  }
  return validateBounds(options);
}

/** The checks every run takes: the time bound and the output bound. */
function validateBounds(options: KillAsUidOptions): number {
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  if (!Number.isInteger(maxOutputBytes) || maxOutputBytes < 0 || maxOutputBytes > 0x7fffffff) {
    throw new BadArgumentError('maxOutputBytes must be an integer from 0 to 2^31 - 1', {
      field: 'maxOutputBytes',
    });
  }
  if (!Number.isFinite(options.timeoutMs) || options.timeoutMs < 0) {
    throw new BadArgumentError('timeoutMs must be a non-negative number', { field: 'timeoutMs' });
  }
  return maxOutputBytes;
}

function validate(argv: readonly string[], options: RunProgramOptions): Validated {
  const file = argv[0];
  if (file === undefined || !file.startsWith('/')) {
    throw new BadArgumentError('argv[0] must be an absolute path', { field: 'argv' });
  }
  const env = Object.entries(options.env ?? {}).map(([key, value]) => {
    if (key === '' || key.includes('=')) {
      throw new BadArgumentError(`environment name ${JSON.stringify(key)} is not valid`, { field: 'env' });
    }
    return `${key}=${value}`;
  });
  const cwd = options.cwd ?? '/';
  for (const value of [...argv, ...env, cwd]) {
    if (value.includes('\0')) throw new BadArgumentError('argv, env and cwd must not hold NUL bytes');
  }
  const maxOutputBytes = validateBounds(options);
  return { file, argv, env, cwd, maxOutputBytes };
}

/**
 * One program's bookkeeping, the same in both modes: the timer, the abort, the overflow, the
 * grace after a kill. `kill` signals the program (its group); `forget` drops it after the grace.
 */
class Run {
  private stopped: ProgramResult['stopped'];
  private timer: NodeJS.Timeout | undefined;
  private graceTimer: NodeJS.Timeout | undefined;
  private settled = false;
  private readonly onAbort = (): void => {
    this.stop('aborted');
  };

  constructor(
    private readonly options: RunProgramOptions,
    private readonly kill: () => void,
    private readonly forget: () => void,
    private readonly resolve: (result: ProgramResult) => void,
    private readonly reject: (error: Error) => void,
  ) {}

  /** Once the program is running. */
  begin(): void {
    this.timer = setTimeout(() => {
      this.stop('timed out');
    }, this.options.timeoutMs);
    const signal = this.options.abortSignal;
    if (signal?.aborted === true) this.onAbort();
    else signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  overflowed(): void {
    if (this.options.onOverflow === 'kill') this.stop('output too large');
  }

  stop(reason: NonNullable<ProgramResult['stopped']>): void {
    if (this.settled || this.stopped !== undefined) return;
    this.stopped = reason;
    this.kill();
    const grace = this.options.killGraceMs;
    if (grace !== undefined) {
      this.graceTimer = setTimeout(() => {
        this.forget();
        this.end({
          exitCode: null,
          signal: null,
          stdout: Buffer.alloc(0),
          stderr: Buffer.alloc(0),
          stdoutBytes: 0,
          stderrBytes: 0,
          abandoned: true,
        });
      }, grace);
    }
  }

  end(result: Omit<ProgramResult, 'stopped'>): void {
    if (this.settled) return;
    this.cleanup();
    this.resolve({ ...result, stopped: this.stopped });
  }

  fail(error: Error): void {
    if (this.settled) return;
    this.cleanup();
    this.reject(error);
  }

  private cleanup(): void {
    this.settled = true;
    clearTimeout(this.timer);
    clearTimeout(this.graceTimer);
    this.options.abortSignal?.removeEventListener('abort', this.onAbort);
  }
}

function startError(message: string, errno: string | undefined): SystemError {
  return new SystemError(message, errno === undefined ? {} : { errno });
}

/** errno number to its name (ENOENT, EAGAIN), from Node.js's own table. */
const ERRNO_NAMES = new Map<number, string>(
  Object.entries(constants.errno).map(([name, number]) => [number, name]),
);

// -- Through the spawner process --------------------------------------------------------------

interface PendingRun {
  readonly run: Run;
  readonly argv0: string;
  readonly processGroup: boolean;
  /** Its pid once the spawner said it started. */
  pid?: number;
}

function perlSpawner(perl: string): Spawner {
  let child: ChildProcess | undefined;
  let nextId = 1;
  const pending = new Map<number, PendingRun>();
  // Output of the spawner not yet parsed: chunks, joined only once a whole frame is there (a
  // result of several MiB arrives in many chunks).
  let input: Buffer[] = [];
  let inputBytes = 0;
  let diagnostics = '';

  const refresh = (): void => {
    // The spawner never keeps the harness alive by itself; a program in flight does.
    const streams = [child?.stdout, child?.stdin] as ({ ref(): void; unref(): void } | null | undefined)[];
    for (const stream of streams) {
      if (pending.size > 0) stream?.ref();
      else stream?.unref();
    }
  };

  /**
   * The spawner could not start (`errno`: why, EAGAIN for one) or died: what it was running fails.
   * A death has no errno: whether such a program ran, and how far, is unknown.
   */
  const lost = (why: string, errno?: string): void => {
    const gone = [...pending.values()];
    pending.clear();
    child = undefined;
    input = [];
    inputBytes = 0;
    for (const { run, argv0, processGroup, pid } of gone) {
      // A group of its own outlives the spawner: ended here, as a kill of the run would have.
      // (Its id stays reserved while a member of it lives.) A lone program cannot be told from
      // a later process that got its pid once it is reparented, so it is left to finish.
      if (processGroup && pid !== undefined) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // the group is gone
        }
      }
      run.fail(
        startError(
          `the spawner process running ${argv0} ${why}${diagnostics === '' ? '' : `: ${diagnostics.trim()}`}`,
          errno,
        ),
      );
    }
  };

  const onFrame = (frame: Buffer): void => {
    const type = String.fromCharCode(frame[0]!);
    const id = frame.readUInt32BE(1);
    const entry = pending.get(id);
    if (entry === undefined) return;
    switch (type) {
      case 'S':
        entry.pid = frame.readUInt32BE(5);
        return;
      case 'E': {
        pending.delete(id);
        refresh();
        const errno = frame.readUInt32BE(5);
        const message = readString(frame, 9).value.toString('utf8');
        entry.run.fail(
          startError(`cannot run ${entry.argv0}: ${message}`, ERRNO_NAMES.get(errno) ?? `errno ${errno}`),
        );
        return;
      }
      case 'O':
        entry.run.overflowed();
        return;
      case 'D': {
        pending.delete(id);
        refresh();
        const status = frame.readUInt32BE(5);
        const stdoutBytes = frame.readUInt32BE(9);
        const stderrBytes = frame.readUInt32BE(13);
        const stdout = readString(frame, 17);
        const stderr = readString(frame, stdout.next);
        const termSignal = status & 0x7f;
        entry.run.end({
          exitCode: termSignal === 0 ? (status >> 8) & 0xff : null,
          signal: termSignal === 0 ? null : (SIGNAL_NAMES.get(termSignal) ?? 'SIGKILL'),
          stdout: Buffer.from(stdout.value),
          stderr: Buffer.from(stderr.value),
          stdoutBytes,
          stderrBytes,
          abandoned: false,
        });
        return;
      }
      default:
        return;
    }
  };

  const ensure = (): ChildProcess => {
    if (child !== undefined) return child;
    diagnostics = '';
    const started = spawn(perl, ['-e', spawnerProgram], {
      cwd: '/',
      env: {},
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child = started;
    started.unref();
    started.stdin.on('error', () => undefined); // a dead spawner is reported by 'close'
    started.stderr.setEncoding('utf8');
    started.stderr.on('data', (text: string) => {
      diagnostics = (diagnostics + text).slice(-2000);
    });
    (started.stderr as unknown as { unref(): void }).unref();
    started.stdout.on('data', (chunk: Buffer) => {
      input.push(chunk);
      inputBytes += chunk.length;
      for (;;) {
        if (inputBytes < 4) return;
        if (input[0]!.length < 4) input = [Buffer.concat(input)];
        const need = 4 + input[0]!.readUInt32BE(0);
        if (inputBytes < need) return;
        const joined = input.length === 1 ? input[0]! : Buffer.concat(input);
        onFrame(joined.subarray(4, need));
        input = joined.length === need ? [] : [joined.subarray(need)];
        inputBytes -= need;
      }
    });
    started.on('error', (error: NodeJS.ErrnoException) => {
      if (child === started) lost(`could not start: ${error.message}`, error.code);
    });
    started.on('close', (code, signal) => {
      if (child === started) lost(`ended (${signal ?? `exit ${code}`})`);
    });
    return started;
  };

  /** Send one job's frame (`body`: its fields after the id) and keep its bookkeeping. */
  const submit = (
    type: 'R' | 'P' | 'U',
    body: readonly Buffer[],
    label: string,
    options: KillAsUidOptions,
    processGroup: boolean,
  ): Promise<ProgramResult> =>
    new Promise<ProgramResult>((resolve, reject) => {
      const broker = ensure();
      const id = nextId;
      nextId = nextId >= 0xffffffff ? 1 : nextId + 1;
      const send = (bytes: Buffer): void => {
        if (child === broker) broker.stdin!.write(bytes);
      };
      const run = new Run(
        options,
        () => {
          send(frame('K', [uint32(id), uint32(9)]));
        },
        () => {
          if (pending.delete(id)) refresh();
          send(frame('F', [uint32(id)]));
        },
        resolve,
        reject,
      );
      pending.set(id, { run, argv0: label, processGroup });
      refresh();
      send(frame(type, [uint32(id), ...body]));
      // The bound runs from now, not from the spawner's answer: a spawner that stalls cannot
      // stretch it (and a kill sent from here on follows the run's frame).
      run.begin();
    });

  return {
    mode: 'spawner',
    pid: () => child?.pid,
    run(argv, options) {
      const checked = validate(argv, options);
      // `perl -e source args...` with the spawner's own perl: run in its fork, no exec. perl
      // reads switches after the source up to the first other argument (`--` ends them and is
      // dropped), so a first argument that is a switch goes to a real perl.
      const rest = checked.argv.slice(3);
      const first = rest[0];
      const inFork =
        checked.file === perl &&
        checked.argv[1] === '-e' &&
        checked.argv.length >= 3 &&
        (first === undefined || first === '--' || !first.startsWith('-'));
      const [what, args] = inFork
        ? [checked.argv[2]!, first === '--' ? rest.slice(1) : rest]
        : [checked.file, checked.argv];
      return submit(
        inFork ? 'P' : 'R',
        [
          uint32(options.processGroup === true ? 1 : 0),
          uint32(checked.maxOutputBytes),
          encodeString(checked.cwd),
          encodeString(what),
          uint32(args.length),
          ...args.map(encodeString),
          uint32(checked.env.length),
          ...checked.env.map(encodeString),
        ],
        checked.file,
        options,
        options.processGroup === true,
      );
    },
    killAsUid(target, options) {
      const maxOutputBytes = validateKill(target, options);
      return submit(
        'U',
        [uint32(maxOutputBytes), uint32(target.uid), uint32(target.gid), uint32(target.rounds)],
        `the kill as uid ${target.uid}`,
        options,
        false,
      );
    },
    close() {
      const running = child;
      if (running === undefined) return Promise.resolve();
      return new Promise((resolve) => {
        running.once('close', () => {
          resolve();
        });
        running.ref();
        (running.stdout as unknown as { ref(): void }).ref();
        running.stdin!.end();
      });
    },
  };
}

function uint32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32BE(value);
  return buffer;
}

function encodeString(value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  return Buffer.concat([uint32(bytes.length), bytes]);
}

function frame(type: 'R' | 'P' | 'U' | 'K' | 'F', fields: readonly Buffer[]): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), ...fields]);
  return Buffer.concat([uint32(body.length), body]);
}

function readString(frameBytes: Buffer, at: number): { value: Buffer; next: number } {
  const length = frameBytes.readUInt32BE(at);
  return { value: frameBytes.subarray(at + 4, at + 4 + length), next: at + 4 + length };
}

// -- Directly (no Perl) -----------------------------------------------------------------------

function directSpawner(): Spawner {
  return {
    mode: 'direct',
    pid: () => undefined,
    run(argv, options) {
      const checked = validate(argv, options);
      return new Promise<ProgramResult>((resolve, reject) => {
        const env = Object.fromEntries(
          checked.env.map((pair) => pair.split(/=(.*)/s, 2) as [string, string]),
        );
        const child = spawn(checked.file, checked.argv.slice(1), {
          argv0: checked.argv[0],
          cwd: checked.cwd,
          env,
          detached: options.processGroup === true,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const kept = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
        const bytes = { stdout: 0, stderr: 0 };
        let over = false;
        const run = new Run(
          options,
          () => {
            try {
              if (options.processGroup === true && child.pid !== undefined)
                process.kill(-child.pid, 'SIGKILL');
              else child.kill('SIGKILL');
            } catch {
              // already gone
            }
          },
          () => {
            child.stdout.destroy();
            child.stderr.destroy();
          },
          resolve,
          reject,
        );
        for (const name of ['stdout', 'stderr'] as const) {
          child[name].on('data', (chunk: Buffer) => {
            const room = checked.maxOutputBytes - bytes[name];
            if (room > 0) kept[name].push(room >= chunk.length ? chunk : chunk.subarray(0, room));
            bytes[name] += chunk.length;
            if (bytes[name] > checked.maxOutputBytes && !over) {
              over = true;
              run.overflowed();
            }
          });
        }
        child.once('spawn', () => {
          run.begin();
        });
        child.once('error', (error: NodeJS.ErrnoException) => {
          // Only a failed start reports 'error' here (kill() failures are caught above).
          if (child.pid === undefined)
            run.fail(startError(`cannot run ${checked.file}: ${error.message}`, error.code));
        });
        child.once('close', (code, signal) => {
          if (child.pid === undefined) return;
          run.end({
            exitCode: code,
            signal,
            stdout: Buffer.concat(kept.stdout),
            stderr: Buffer.concat(kept.stderr),
            stdoutBytes: bytes.stdout,
            stderrBytes: bytes.stderr,
            abandoned: false,
          });
        });
      });
    },
    killAsUid(target, options) {
      validateKill(target, options);
      return Promise.reject(
        new SystemError('killing as a uid needs the spawner process (no trusted perl here)', {
          errno: 'ENOSYS',
        }),
      );
    },
    close: () => Promise.resolve(),
  };
}
