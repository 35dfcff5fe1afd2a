import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { BadArgumentError, identityOf, isSameProcessAlive, killPid, readProcessStat } from '@karotte/base';
import type { ProcessIdentity, ProcessStat } from '@karotte/base';
import { OutputCapture, TokenScanner } from './output.js';
import { childrenOf, commandLineOf, processStatsOfUid } from './procfs.js';
import { SHELL_BOOT, SHELL_SCRIPT } from './shell-script.js';
import type { World } from './confinement/world.js';
import { ROOT_ENV, WorldGoneError } from './confinement/world.js';

/** What one command in the persistent shell produced. Expected outcomes are data, never exceptions. */
export interface ExecResult {
  /** Kept stdout (head and tail; a dropped middle is marked in the text). */
  readonly stdout: string;
  readonly stderr: string;
  /** The command's exit status; null when it was stopped (timeout, abort) or the shell died by a signal. */
  readonly exitCode: number | null;
  /** The command ran past its timeout and its foreground processes were killed. */
  readonly timedOut: boolean;
  /** The caller's abortSignal stopped the command. */
  readonly aborted: boolean;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  /** Bytes the command wrote to stdout in all (kept or not). */
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  readonly durationMs: number;
  /**
   * The shell died or had to be killed during this command (a fresh one is started), or the
   * whole sandbox was restarted before it (every process had been stopped; files are kept).
   */
  readonly restarted: boolean;
  /** A sentence for the student when something happened to its shell (restart, timeout). */
  readonly notice: string | undefined;
}

export interface ShellOptions {
  readonly world: World;
  readonly uid: number;
  readonly home: string;
  readonly env: Readonly<Record<string, string>>;
  readonly bash: string;
  readonly envBinary: string;
  readonly cat: string;
  readonly headBytes: number;
  readonly tailBytes: number;
  /** How long a command may take to come back after its foreground processes were killed. */
  readonly killGraceMs: number;
}

export interface RunOptions {
  readonly timeoutMs: number;
  readonly abortSignal?: AbortSignal | undefined;
}

/** Bytes of background output kept between commands (prepended to the next command's output). */
const IDLE_OUTPUT_CAP = 64 * 1024;
const MARKER_LINE_CAP = 256;

interface Pending {
  nonce: string | undefined;
  status: number | undefined;
  marker: boolean;
  stdoutDone: boolean;
  stderrDone: boolean;
  stdout: OutputCapture;
  stderr: OutputCapture;
  wake: () => void;
}

/** One live bash process and its pipes. */
interface Session {
  child: ChildProcess;
  commands: Writable;
  markers: Readable;
  exited: boolean;
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  /** The shell broke the protocol (unexpected marker): kill and restart before the next command. */
  broken: string | undefined;
  /** The marker channel hit EOF: the shell exited, or closed the channel and must be replaced. */
  markerEof: boolean;
  bashPid: number;
  /** The bash's identity once found (the guard against a reused pid when it is killed). */
  bashIdentity: ProcessIdentity | undefined;
  /** The bash's argument vector: a fork of the shell that did not exec has the same one. */
  bashCommandLine: Buffer | undefined;
  /** The shell wrote `R`: it is about to read its first command. Before that, it read none. */
  ready: boolean;
}

/**
 * Why a command was not run (never sent to, or never read by, a shell): `closed`, the shell
 * was closed (a reap); `world-gone`, the sandbox's init had died; `killed-at-start`, a new
 * shell was killed by a signal before it could read a command (out of memory at start).
 */
export interface NotRun {
  readonly notRun: 'closed' | 'world-gone' | 'killed-at-start';
}

/**
 * The student's one persistent bash session. Commands run one at a time (queued); a dead or
 * desynchronised shell is replaced before the next command, and the result says so.
 */
export class PersistentShell {
  private session: Session | undefined;
  private pending: Pending | undefined;
  private readonly stdoutScanner = new TokenScanner();
  private readonly stderrScanner = new TokenScanner();
  private idleStdout: Buffer[] = [];
  private idleStderr: Buffer[] = [];
  private idleBytes = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: ShellOptions) {}

  /** The world this shell lives in (a restarted world gets a new shell). */
  get world(): World {
    return this.options.world;
  }

  /**
   * Run `command`; commands are serialised. Resolves {@link NotRun} when no shell read the
   * command (the caller restarts the world and tries again).
   */
  run(command: string, options: RunOptions): Promise<ExecResult | NotRun> {
    if (command.includes('\0'))
      throw new BadArgumentError('command must not contain NUL bytes', { field: 'command' });
    const result = this.queue.then(() => this.runNow(command, options));
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Start the shell now (it then waits for its first command), so the first exec does not pay for it. */
  prestart(): void {
    if (this.session === undefined && !this.closed) this.tryStart();
  }

  /** start(), or undefined when the world died just now (the caller sees it and rebuilds). */
  private tryStart(): Session | undefined {
    if (!this.options.world.alive()) return undefined;
    try {
      return this.start();
    } catch (error) {
      if (error instanceof WorldGoneError) return undefined;
      throw error;
    }
  }

  /** Kill the shell (not the sandbox). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    await this.killSession();
  }

  private start(): Session {
    const { world, uid, home, env, bash, envBinary, cat } = this.options;
    const assignments = Object.entries(env).map(([name, value]) => `${name}=${value}`);
    const program = [
      envBinary,
      '-i',
      '-C',
      home,
      ...assignments,
      bash,
      '--noprofile',
      '--norc',
      '-c',
      SHELL_BOOT,
      'karotte-shell',
      cat,
    ];
    const [file, ...args] = world.launchArgv(uid, 4, program);
    const child = spawn(file!, args, { env: ROOT_ENV, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] });
    const session: Session = {
      child,
      commands: child.stdio[3] as Writable,
      markers: child.stdio[4] as Readable,
      exited: false,
      exitCode: null,
      exitSignal: null,
      broken: undefined,
      markerEof: false,
      bashPid: 0,
      bashIdentity: undefined,
      bashCommandLine: undefined,
      ready: false,
    };
    child.on('error', () => {
      session.exited = true;
      this.pending?.wake();
    });
    child.on('exit', (code, signal) => {
      session.exited = true;
      session.exitCode = code;
      session.exitSignal = signal;
      this.pending?.wake();
    });
    session.commands.on('error', () => undefined);
    // The shell's program, before any command: the bootstrap reads it from this channel.
    session.commands.write(`${SHELL_SCRIPT}\0`);
    child.stdout!.on('data', (chunk: Buffer) => {
      this.onOutput(session, 'stdout', chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      this.onOutput(session, 'stderr', chunk);
    });
    let markerText = '';
    session.markers.on('data', (chunk: Buffer) => {
      if (this.session !== session) return;
      markerText += chunk.toString('latin1');
      let newline: number;
      while ((newline = markerText.indexOf('\n')) >= 0) {
        const line = markerText.slice(0, newline);
        markerText = markerText.slice(newline + 1);
        this.onMarker(session, line);
      }
      if (markerText.length > MARKER_LINE_CAP) {
        session.broken = 'the shell wrote garbage on its marker channel';
        markerText = '';
        this.pending?.wake();
      }
    });
    session.markers.on('end', () => {
      // EOF on the marker channel: the shell (and everything holding its copy) closed it.
      session.markerEof = true;
      this.pending?.wake();
    });
    session.markers.on('error', () => undefined);
    this.session = session;
    return session;
  }

  private onOutput(session: Session, stream: 'stdout' | 'stderr', chunk: Buffer): void {
    if (this.session !== session) return;
    const pending = this.pending;
    const scanner = stream === 'stdout' ? this.stdoutScanner : this.stderrScanner;
    if (pending === undefined) {
      this.keepIdle(stream, chunk);
      return;
    }
    const { output, after } = scanner.feed(chunk);
    const done = stream === 'stdout' ? pending.stdoutDone : pending.stderrDone;
    if (done) {
      this.keepIdle(stream, chunk);
      return;
    }
    pending[stream].push(output);
    if (after !== undefined) {
      if (stream === 'stdout') pending.stdoutDone = true;
      else pending.stderrDone = true;
      if (after.length > 0) this.keepIdle(stream, after);
      pending.wake();
    }
  }

  private keepIdle(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    if (this.idleBytes >= IDLE_OUTPUT_CAP) return;
    const take = chunk.subarray(0, IDLE_OUTPUT_CAP - this.idleBytes);
    this.idleBytes += take.length;
    (stream === 'stdout' ? this.idleStdout : this.idleStderr).push(Buffer.from(take));
  }

  private onMarker(session: Session, line: string): void {
    const pending = this.pending;
    if (line === 'R' && !session.ready) {
      session.ready = true;
      return;
    }
    const exit = /^E (-?\d{1,6})$/.exec(line);
    if (exit && pending !== undefined && pending.status === undefined) {
      pending.status = Number(exit[1]);
      // Only now does a nonce exist: the command is over, so nothing it started can have read it.
      const nonce = randomBytes(16).toString('hex');
      pending.nonce = nonce;
      this.stdoutScanner.arm(nonce);
      this.stderrScanner.arm(nonce);
      session.commands.write(`${nonce}\n`);
      return;
    }
    const done = /^M ([0-9a-f]{32})$/.exec(line);
    if (done && pending?.nonce !== undefined && done[1] === pending.nonce && !pending.marker) {
      pending.marker = true;
      pending.wake();
      return;
    }
    // A marker we did not ask for: something in the shell speaks the protocol. Never trust it again.
    session.broken = 'the shell sent an unexpected completion marker';
    pending?.wake();
  }

  private async runNow(command: string, options: RunOptions): Promise<ExecResult | NotRun> {
    const started = performance.now();
    let restarted = false;
    const notices: string[] = [];
    if (this.closed) return { notRun: 'closed' };
    if (!this.options.world.alive()) return { notRun: 'world-gone' };
    let session = this.session;
    if (session === undefined || session.exited || session.broken !== undefined) {
      if (session !== undefined) {
        notices.push(
          `A new shell was started (${session.broken ?? 'the previous shell exited'}); the working directory and variables were reset.`,
        );
        restarted = true;
        await this.killSession();
      }
      if (this.closed) return { notRun: 'closed' };
      const fresh = this.tryStart();
      if (fresh === undefined) return { notRun: 'world-gone' };
      session = fresh;
    }
    const { headBytes, tailBytes } = this.options;
    let wake: () => void = () => undefined;
    let woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const pending: Pending = {
      nonce: undefined,
      status: undefined,
      marker: false,
      stdoutDone: false,
      stderrDone: false,
      stdout: new OutputCapture(headBytes, tailBytes),
      stderr: new OutputCapture(headBytes, tailBytes),
      wake: () => {
        wake();
      },
    };
    for (const chunk of this.idleStdout) pending.stdout.push(chunk);
    for (const chunk of this.idleStderr) pending.stderr.push(chunk);
    this.idleStdout = [];
    this.idleStderr = [];
    this.idleBytes = 0;
    this.stdoutScanner.disarm();
    this.stderrScanner.disarm();
    // Processes alive before the command are spared by a timeout (earlier background jobs).
    const before = snapshot(this.options.uid);
    this.pending = pending;
    session.commands.write(`${command}\0`);

    let timedOut = false;
    let aborted = false;
    let stopped = false;
    let killedShell = false;
    const deadline = started + options.timeoutMs;
    let graceDeadline = Number.POSITIVE_INFINITY;
    const onAbort = (): void => {
      pending.wake();
    };
    options.abortSignal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const complete = pending.marker && pending.stdoutDone && pending.stderrDone;
        if (complete || session.exited || session.broken !== undefined) break;
        if (session.markerEof) {
          // Usually `exit`: the process is about to be reaped. Otherwise the channel was closed.
          await waitForExit(session, 500);
          if (!session.exited) session.broken = 'the shell closed its marker channel';
          continue;
        }
        const now = performance.now();
        if (!stopped && (now >= deadline || options.abortSignal?.aborted)) {
          stopped = true;
          aborted = options.abortSignal?.aborted === true && now < deadline;
          timedOut = !aborted;
          await this.killForeground(session, before, 2000, 'after-first');
          graceDeadline = performance.now() + this.options.killGraceMs;
          continue;
        }
        if (stopped && now >= graceDeadline) {
          // The shell itself is stuck (a builtin loop, a stopped relay): replace it.
          killedShell = true;
          break;
        }
        if (stopped) {
          // A shell slowed down by load may fork the command only after the first kill pass:
          // whatever appears during the grace period is killed too.
          await this.killForeground(
            session,
            before,
            Math.max(0, Math.min(GRACE_SWEEP_MS, graceDeadline - now)),
            'always',
          );
        }
        const wait = Math.max(1, Math.min(stopped ? graceDeadline : deadline, deadline) - now);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          woken,
          new Promise<void>((resolve) => {
            timer = setTimeout(
              resolve,
              stopped ? Math.max(1, Math.min(GRACE_SWEEP_MS, graceDeadline - now)) : wait,
            );
          }),
        ]);
        clearTimeout(timer);
        woken = new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    } finally {
      options.abortSignal?.removeEventListener('abort', onAbort);
      this.pending = undefined;
      const held = [this.stdoutScanner.disarm(), this.stderrScanner.disarm()];
      if (!pending.stdoutDone && held[0]!.length > 0) pending.stdout.push(held[0]!);
      if (!pending.stderrDone && held[1]!.length > 0) pending.stderr.push(held[1]!);
    }

    let exitCode: number | null = stopped ? null : (pending.status ?? null);
    const complete = pending.marker && pending.stdoutDone && pending.stderrDone;
    if (!complete && !stopped && session.exited && !session.ready) {
      await waitForExit(session, 1000);
      if (this.closed || !this.options.world.alive() || session.exitSignal !== null) {
        // No shell read the command: it did not run. Say so to the caller, which restarts.
        await this.killSession();
        if (this.closed) return { notRun: 'closed' };
        return { notRun: this.options.world.alive() ? 'killed-at-start' : 'world-gone' };
      }
    }
    if (!complete && !this.closed && session.exited && !stopped && session.exitSignal === 'SIGKILL') {
      // A shell SIGKILLed mid-command: alone (the OOM killer chose it), or with every process
      // of the namespace when its init was killed. The shell's exit can be seen before its
      // init's, so give the world a moment to show it is going before saying which it was.
      await waitUntil(() => !this.options.world.alive(), WORLD_DEATH_GRACE_MS);
    }
    if (!complete) {
      if (this.closed) {
        // close(): the sandbox is being reaped or destroyed.
        notices.push(
          'The command was stopped: every process of the sandbox was killed (the sandbox was reaped).',
        );
      } else if (session.exited && !stopped && !this.options.world.alive()) {
        // The sandbox's init died (out of memory, or reaped from outside): every process of
        // the sandbox died with it. The caller rebuilds the world before the next command.
        await waitForExit(session, 1000);
        exitCode = session.exitCode;
        notices.push(
          'Every process of the sandbox was killed while the command ran (it ran out of memory, or it was stopped from outside); the next command starts in a fresh shell. Files in the working directory are kept.',
        );
      } else if (session.exited && !stopped) {
        // `exit`, a crash, or a kill: the shell's own exit status is the command's.
        await waitForExit(session, 1000);
        exitCode = session.exitCode;
        notices.push(
          `The shell ${session.exitSignal ? `was killed by ${session.exitSignal}` : `exited with status ${String(session.exitCode)}`}; a new shell was started in the working directory.`,
        );
      } else if (killedShell) {
        notices.push(
          'The shell did not come back after the command was stopped; a new shell was started in the working directory.',
        );
      } else if (session.broken !== undefined) {
        notices.push(
          `A new shell was started (${session.broken}); the working directory and variables were reset.`,
        );
      } else if (pending.marker) {
        // Completed, but the output tokens never came: the relays were killed or stopped.
        notices.push('The shell lost its output channel; a new shell was started in the working directory.');
      }
      if (!this.closed) restarted = true;
      await this.killSession();
      // A stopped command's processes go with the shell they ran in, not only the shell.
      if (stopped) await this.killForeground(session, before, 2000, 'never');
      if (!this.closed) this.tryStart();
    }
    if (stopped && complete && !this.closed) {
      // The command's subshell has exited (the shell reported its end after waiting for it),
      // so no fork of it still saves a state: what the spared passes left alive goes now.
      await this.killForeground(session, before, 2000, 'never');
    }
    if (stopped) {
      notices.push(
        aborted
          ? 'The command was cancelled; its foreground processes were killed.'
          : `The command timed out after ${options.timeoutMs} ms; its foreground processes were killed.`,
      );
    }
    return {
      stdout: pending.stdout.text(),
      stderr: pending.stderr.text(),
      exitCode,
      timedOut,
      aborted,
      stdoutTruncated: pending.stdout.truncated,
      stderrTruncated: pending.stderr.truncated,
      stdoutBytes: pending.stdout.totalBytes,
      stderrBytes: pending.stderr.totalBytes,
      durationMs: Math.round(performance.now() - started),
      restarted,
      notice: notices.length > 0 ? notices.join(' ') : undefined,
    };
  }

  /** The shell's bash (nsenter's only child), found once and remembered with its start time. */
  private findBash(session: Session): void {
    if (session.bashPid !== 0 || session.child.pid === undefined) return;
    const [pid] = childrenOf(session.child.pid);
    if (pid === undefined) return;
    session.bashPid = pid;
    session.bashIdentity = identityOf(pid);
    session.bashCommandLine = commandLineOf(pid);
  }

  /**
   * Kill every student process that did not exist when the command started, except the
   * shell itself, the command's own shell (the shell's child that runs the command: killing
   * its foreground job ends the command, as a timeout does in an interactive shell, and its
   * state is kept) and what earlier background jobs fork (a process whose nearest ancestor
   * that predates the command is such a job): the foreground job and whatever it forked,
   * orphans included. A command's shell that does not come back (a builtin loop) is replaced
   * with the whole shell after the grace period; once the shell is gone it is no longer its
   * child, and the next pass kills it. Repeated until a pass finds none or `budgetMs` is
   * spent, so a fork loop cannot outrun it (the pids limit bounds it). `spareShellForks`
   * says which passes leave alone a process with the shell's own argument vector, a fork of
   * it that did not exec (a subshell, a command substitution): once its job is killed, the
   * command's subshell forks one to save the state it leaves, and a sweep that killed it
   * would lose that state. The timeout's first pass spares none (`after-first`), the grace's
   * sweeps spare them (`always`; a loop of such forks is ended with the whole shell when the
   * grace is over), and the pass after the shell is gone spares none (`never`).
   */
  private async killForeground(
    session: Session,
    before: Set<string>,
    budgetMs: number,
    spareShellForks: 'never' | 'after-first' | 'always',
  ): Promise<void> {
    this.findBash(session);
    let spare = spareShellForks === 'always';
    const isShellFork = (pid: number): boolean => {
      if (!spare || session.bashCommandLine === undefined) return false;
      const line = commandLineOf(pid);
      return line !== undefined && line.equals(session.bashCommandLine);
    };
    const deadline = performance.now() + budgetMs;
    for (;;) {
      const all = processStatsOfUid(this.options.uid);
      const byPid = new Map(all.map((info) => [info.pid, info]));
      const predates = (info: ProcessStat): boolean => before.has(`${info.pid}:${info.startTicks}`);
      const forkedByEarlierJob = (info: ProcessStat): boolean => {
        // Up the parent chain within the uid (bounded: a chain cannot be longer than the set).
        let current = byPid.get(info.ppid);
        for (let hops = 0; current !== undefined && hops < all.length; hops += 1) {
          if (current.pid === session.bashPid) return false;
          if (predates(current)) return true;
          current = byPid.get(current.ppid);
        }
        return false;
      };
      const victims = all.filter(
        (info) =>
          info.pid !== session.bashPid &&
          info.ppid !== session.bashPid &&
          !predates(info) &&
          !forkedByEarlierJob(info) &&
          !isShellFork(info.pid),
      );
      if (victims.length === 0) return;
      for (const victim of victims) killPid(victim.pid);
      // The command's subshell goes on once its job is killed, and forks to save its state.
      if (spareShellForks === 'after-first') spare = true;
      // Every pass kills what it found; the budget only bounds how many passes follow.
      if (performance.now() > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  private async killSession(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    if (session === undefined) return;
    this.findBash(session);
    let killedInside = false;
    if (session.bashIdentity !== undefined && isSameProcessAlive(session.bashIdentity)) {
      killedInside = killPid(session.bashPid);
    }
    // nsenter, outside the PID namespace, is the shell's parent: it reaps the shell and exits.
    // Killed first, it would leave the shell a zombie for the host's init to reap whenever it
    // gets to it, and the namespace's init cannot finish exiting before that (seconds).
    if (killedInside) await waitForExit(session, 1000);
    if (!session.exited) {
      try {
        session.child.kill('SIGKILL');
      } catch {
        // gone
      }
    }
    await waitForExit(session, 2000);
    session.commands.destroy();
    session.markers.destroy();
    session.child.stdout?.destroy();
    session.child.stderr?.destroy();
  }
}

/** While a stopped command's shell is given its grace, how often its new processes are killed. */
const GRACE_SWEEP_MS = 50;

/** How long a SIGKILLed shell waits to see whether its world died too. */
const WORLD_DEATH_GRACE_MS = 250;

/** Poll `condition` every 10 ms until it holds or `timeoutMs` passed. */
async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition() && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function waitForExit(session: Session, timeoutMs: number): Promise<void> {
  if (session.exited) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    session.child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * The student's processes right now, as `pid:startTime`. A cheap scan (the owner of
 * /proc/<pid> is the process's effective uid): a process that made itself non-dumpable shows
 * as root and is not spared, which only means a timeout may also kill it.
 */
function snapshot(uid: number): Set<string> {
  const out = new Set<string>();
  for (const name of readdirSync('/proc')) {
    const code = name.charCodeAt(0);
    if (code < 48 || code > 57) continue;
    try {
      if (statSync(`/proc/${name}`).uid !== uid) continue;
    } catch {
      continue;
    }
    const info = readProcessStat(Number(name));
    if (info) out.add(`${info.pid}:${info.startTicks}`);
  }
  return out;
}
