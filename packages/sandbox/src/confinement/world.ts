import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { identityOf, isSameProcessAlive, killPid } from '@karotte/base';
import type { ProcessIdentity } from '@karotte/base';
import { SandboxError } from '../errors.js';
import type { SandboxBinaries } from './binaries.js';
import { mountViolations } from './mounts.js';
import { childrenOf, isSameProcessLiving } from '../procfs.js';
import {
  DEV_PROGRAM,
  INIT_SCRIPT,
  LAUNCH_SCRIPT,
  MOUNT_PROGRAM,
  SECCOMP_LOADER,
  SETUP_SCRIPT,
} from './scripts.js';

/**
 * The world's init died between a check and a launch (the OOM killer, a reap from outside).
 * Internal: callers catch it and rebuild; one that escapes is a SETUP_FAILED, never DESTROYED
 * (that code means destroy() was called).
 */
export class WorldGoneError extends SandboxError {
  constructor() {
    super('SETUP_FAILED', 'the sandbox namespaces are gone (their init died)');
  }
}

/** The minimal environment of every root process the sandbox starts: never the harness's. */
export const ROOT_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
});

export interface WorldOptions {
  readonly bins: SandboxBinaries;
  /** Launch prefix of the episode's limits group (joins the cgroup, oom_score_adj, rlimits, then execs). */
  readonly prefix: readonly string[];
  /** Directives for the setup script (see SETUP_SCRIPT). */
  readonly directives: readonly string[];
  /** The only mount points that may stay writable (checked in the final mount table). */
  readonly writable: readonly string[];
  readonly setupTimeoutMs: number;
  /** The syscall filter of every process launched into the world (see `buildSyscallFilter`). */
  readonly syscallFilter: Buffer;
  readonly abortSignal?: AbortSignal | undefined;
  /**
   * The student's root inside the world, when it is not the world's own: a directory the plan
   * mounted (an image's tree with the world's /proc, /dev, /tmp and home bound in). Every
   * student process is chrooted there by the trusted loader before its first instruction.
   */
  readonly studentRoot?: string | undefined;
}

/**
 * The sandbox's namespaces, held by a PID-1 init. Every student process enters them with
 * nsenter, so a dead shell can be restarted into the same mounts, /tmp and network.
 *
 * Launch order, and why:
 *   1. limits prefix (root): joins the cgroup, sets oom_score_adj 1000 and rlimits, then
 *      execs — same pid, so nothing is ever born outside the group;
 *   2. unshare --pid --fork --kill-child=SIGKILL --mount-proc --mount --propagation private
 *      --ipc --uts --net: new namespaces; the child is PID 1 with its own /proc;
 *   3. the constant setup script as root: loopback up, hostname, every mount read-only and
 *      nosuid, private /tmp and /dev/shm, the working directory, passwd/group, covers;
 *   4. PID 1 becomes a constant init that reaps orphans and dies with the harness's pipe;
 *   5. the harness reads the namespace's mount table from outside and proves it read-only.
 */
export class World {
  private holder: ChildProcess | undefined;
  /** Host pid of the namespace's PID 1. */
  initPid = 0;
  /** Its identity (pid, start ticks, boot): the guard against a reused pid. */
  initIdentity: ProcessIdentity | undefined;
  holderPid = 0;
  private exited = false;

  private readonly filterHex: string;

  constructor(private readonly options: WorldOptions) {
    this.filterHex = options.syscallFilter.toString('hex');
  }

  async start(): Promise<void> {
    // An abort listener added to a signal already aborted never fires: look first.
    if (this.options.abortSignal?.aborted === true) {
      throw new SandboxError('SETUP_FAILED', 'sandbox setup aborted', {
        cause: this.options.abortSignal.reason,
      });
    }
    const { bins, prefix, directives } = this.options;
    const argv = [
      ...prefix,
      bins.unshare,
      '--pid',
      '--fork',
      '--kill-child=SIGKILL',
      '--mount-proc',
      '--mount',
      '--propagation',
      'private',
      '--ipc',
      '--uts',
      '--net',
      '--',
      bins.bash,
      '--noprofile',
      '--norc',
      '-c',
      SETUP_SCRIPT,
      'karotte-setup',
      bins.ip,
      bins.sh,
      bins.cat,
      bins.perl,
      ...directives,
    ];
    const [file, ...args] = argv;
    const holder = spawn(file!, args, {
      env: { ...ROOT_ENV, INIT: INIT_SCRIPT, DEVPL: DEV_PROGRAM, MOUNTPL: MOUNT_PROGRAM },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: false,
    });
    this.holder = holder;
    holder.on('exit', () => {
      this.exited = true;
    });
    // The harness never writes: the pipe only tells PID 1 that the harness is alive.
    holder.stdin?.on('error', () => undefined);
    let stdout = '';
    let stderr = '';
    holder.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 8192) stderr += chunk.toString('utf8');
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        finish(
          new SandboxError(
            'SETUP_FAILED',
            `sandbox setup did not finish within ${this.options.setupTimeoutMs} ms`,
          ),
        );
      }, this.options.setupTimeoutMs);
      const onAbort = (): void => {
        finish(
          new SandboxError('SETUP_FAILED', 'sandbox setup aborted', {
            cause: this.options.abortSignal?.reason,
          }),
        );
      };
      this.options.abortSignal?.addEventListener('abort', onAbort, { once: true });
      const finish = (error?: SandboxError): void => {
        clearTimeout(timer);
        this.options.abortSignal?.removeEventListener('abort', onAbort);
        holder.stdout?.removeAllListeners('data');
        holder.removeListener('exit', onExit);
        holder.removeListener('error', onError);
        if (error) reject(error);
        else resolve();
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
        // stderr may still be in flight when the exit is seen: give it a moment to arrive.
        const report = (): void => {
          finish(
            new SandboxError(
              'SETUP_FAILED',
              `sandbox setup exited (${String(code ?? signal)}) before it was ready: ${stderr.trim() || '(no message)'}`,
            ),
          );
        };
        if (holder.stderr === null || holder.stderr.readableEnded) report();
        else {
          const timer = setTimeout(report, 200);
          holder.stderr.once('end', () => {
            clearTimeout(timer);
            report();
          });
        }
      };
      const onError = (error: Error): void => {
        finish(new SandboxError('SETUP_FAILED', 'cannot start the sandbox namespaces', { cause: error }));
      };
      holder.on('exit', onExit);
      holder.on('error', onError);
      holder.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
        if (stdout.includes('karotte-ready\n')) finish();
        else if (stdout.length > 4096)
          finish(new SandboxError('SETUP_FAILED', 'unexpected output from sandbox setup'));
      });
    });
    holder.stdout?.resume();
    holder.stderr?.resume();
    this.holderPid = holder.pid ?? 0;
    // PID 1 of the namespace is unshare's only child.
    const children = childrenOf(this.holderPid);
    if (children.length !== 1) {
      throw new SandboxError(
        'SETUP_FAILED',
        `expected one namespace init under unshare ${this.holderPid}, found ${children.length}`,
      );
    }
    this.initPid = children[0]!;
    this.initIdentity = identityOf(this.initPid);
    this.verifyInit();
    this.verifyMounts(stderr.trim());
  }

  /**
   * The process found under unshare is the namespace's PID 1 and unshare's child, read from
   * its status (PPid, and the last NSpid entry), before anything is proved from its tables.
   */
  private verifyInit(): void {
    let status = '';
    try {
      status = readFileSync(`/proc/${this.initPid}/status`, 'utf8');
    } catch {
      // gone: said below
    }
    const ppid = /^PPid:\s+(\d+)$/m.exec(status)?.[1];
    const nspid = /^NSpid:[ \t]+([\d \t]+)$/m.exec(status)?.[1]?.trim().split(/\s+/).at(-1);
    if (ppid !== String(this.holderPid) || nspid !== '1') {
      throw new SandboxError(
        'SETUP_FAILED',
        `process ${this.initPid} is not the namespace init under unshare ${this.holderPid} (PPid ${ppid ?? 'unknown'}, NSpid ${nspid ?? 'unknown'})`,
      );
    }
  }

  /**
   * Prove the host read-only from the namespace's final mount table, read from outside
   * (nothing the setup script said is trusted for this): every mount a path can reach is
   * read-only and nosuid, except the writable places, which are nosuid and nodev.
   */
  private verifyMounts(setupSaid: string): void {
    // What setup wrote to stderr while it ran (a mount it found vanished, a read that failed):
    // part of every refusal here, as the one account of why a step did not take.
    const said = setupSaid === '' ? '' : ` (setup said: ${setupSaid.slice(0, 2000)})`;
    let text: string;
    let namespace: string;
    try {
      namespace = readlinkSync(`/proc/${this.initPid}/ns/mnt`);
      text = readFileSync(`/proc/${this.initPid}/mountinfo`, 'utf8');
    } catch (error) {
      throw new SandboxError('SETUP_FAILED', `cannot read the sandbox mount table${said}`, { cause: error });
    }
    if (!this.alive()) throw new SandboxError('SETUP_FAILED', `the sandbox init died during setup${said}`);
    if (namespace === readlinkSync('/proc/self/ns/mnt')) {
      throw new SandboxError(
        'SETUP_FAILED',
        `the sandbox init ${this.initPid} is in the harness's own mount namespace (${namespace})${said}`,
      );
    }
    const violations = mountViolations(text, this.options.writable);
    if (violations.length > 0) {
      throw new SandboxError(
        'SETUP_FAILED',
        `the host is not read-only inside the sandbox${said}: ${violations.join('; ')}`,
        {
          detail: violations,
        },
      );
    }
  }

  private waitForHolder(timeoutMs: number): Promise<void> {
    const holder = this.holder;
    if (holder === undefined || this.exited || timeoutMs <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      holder.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** True while the namespace's init lives and is not on its way out (exiting, SIGKILL pending). */
  alive(): boolean {
    return !this.exited && this.initIdentity !== undefined && isSameProcessLiving(this.initIdentity);
  }

  /**
   * argv that runs `program` as the student inside the sandbox: limits prefix, nsenter into
   * every namespace of PID 1 (nsenter forks, so the program is inside the PID namespace),
   * the root launcher (closes inherited descriptors above `keepFd`), then setpriv. With a
   * `studentRoot`, the program runs chrooted there, unless `worldRoot` (a host program the
   * student runs, such as the file tools' Node.js, which the image does not have).
   */
  launchArgv(
    uid: number,
    keepFd: number,
    program: readonly string[],
    options: { readonly worldRoot?: boolean } = {},
  ): string[] {
    if (!this.alive()) throw new WorldGoneError();
    const { bins, prefix } = this.options;
    return [
      ...prefix,
      bins.nsenter,
      `--target=${this.initPid}`,
      '--mount',
      '--uts',
      '--ipc',
      '--net',
      '--pid',
      '--',
      bins.bash,
      '--noprofile',
      '--norc',
      '-c',
      LAUNCH_SCRIPT,
      'karotte-launch',
      bins.setpriv,
      String(uid),
      String(keepFd),
      bins.perl,
      SECCOMP_LOADER,
      this.filterHex,
      options.worldRoot === true ? '-' : (this.options.studentRoot ?? '-'),
      ...program,
    ];
  }

  /** argv that runs `program` as root inside the sandbox's network namespace only. */
  rootNetArgv(program: readonly string[]): string[] {
    return [this.options.bins.nsenter, `--target=${this.initPid}`, '--net', '--', ...program];
  }

  /**
   * Kill PID 1 (the kernel then kills every process of the PID namespace) and close the
   * harness pipe. Idempotent; safe when start() failed half-way.
   */
  async stop(timeoutMs = 5000): Promise<void> {
    if (this.initIdentity !== undefined && isSameProcessAlive(this.initIdentity)) {
      killPid(this.initPid);
    }
    const holder = this.holder;
    if (holder) {
      holder.stdin?.destroy();
      // unshare reaps its init and exits; only if it does not is it killed (killed first, it
      // would leave the init's zombie to the host's init, which reaps when it gets to it).
      await this.waitForHolder(this.initPid > 0 ? Math.min(1000, timeoutMs) : 0);
      if (!this.exited) {
        try {
          holder.kill('SIGKILL');
        } catch {
          // gone
        }
        await this.waitForHolder(timeoutMs);
      }
      holder.stdout?.destroy();
      holder.stderr?.destroy();
    }
    const deadline = Date.now() + timeoutMs;
    while (
      this.initIdentity !== undefined &&
      isSameProcessAlive(this.initIdentity) &&
      Date.now() < deadline
    ) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
