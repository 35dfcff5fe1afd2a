// The public shape of a sandbox and of what its lifecycle reports.
import type { KillableGroup, ConfirmedReapRecord, LimitEvent } from './seams.js';
import type { EnvRemoval } from './env.js';
import type { SandboxFiles } from './file-tools.js';
import type { NetworkVerdict } from './network.js';
import type { ExecOptions } from './options.js';
import type { ExecResult } from './shell.js';

/** A sandbox's limits as read back from the kernel. */
export interface AppliedLimits {
  readonly memoryBytes: number;
  readonly pids: number;
  /** CPU weight, or null where the host gives none. */
  readonly cpuWeight: number | null;
  readonly diskBytes: number;
  readonly diskInodes: number;
}

/** The student of a sandbox as a reaper needs it. */
export interface SandboxHandle {
  readonly uid: number;
  /** The student's working directory on the host. */
  readonly workDir: string;
  /** The episode's group: an atomic kill of every member, and its members. */
  readonly group: KillableGroup;
}

/** What destroy() did. */
export interface TeardownReport {
  /** The reaper's record (confirmedEmpty true when no student process was alive at the end). */
  readonly reap: ConfirmedReapRecord | undefined;
  /** Limit hits of the episode (memory, pids, disk), for the verdict. */
  readonly limitEvents: readonly LimitEvent[];
  /** What could not be removed (empty on success). */
  readonly leftovers: readonly string[];
  readonly durationMs: number;
}

/** What restart() did. */
export interface RestartReport {
  /** The network check of the new world (also the sandbox's `networkCheck` now). */
  readonly networkCheck: NetworkVerdict;
  readonly durationMs: number;
}

/** One student world: identity, namespaces, limits, shell and file tools. */
export interface Sandbox {
  readonly id: string;
  readonly uid: number;
  readonly gid: number;
  readonly userName: string;
  /** The working directory as the student sees it (`/home/<userName>`), also $HOME. */
  readonly studentWorkDir: string;
  /** The same directory on the host (the quota's mount point): copy task files in, take custody out. */
  readonly workDir: string;
  /** The network check taken before the first step (taken again, and replaced, at every restart). */
  readonly networkCheck: NetworkVerdict;
  /**
   * The limits as the kernel read them back (never as requested). The group and quota
   * themselves stay the sandbox's: nobody else can remove them behind its back.
   */
  readonly appliedLimits: AppliedLimits;
  /** The student as the grader reaps and collects it: uid, the group (kill and list only), workDir. */
  readonly handle: SandboxHandle;
  /** Where the episode's cgroup group lives (one directory per controller on v1), for audits. */
  readonly cgroupDirs: readonly string[];
  /**
   * The limit hits so far (memory, pids, disk), in order of first sight: the record for the
   * verdict. A rejection is a host fault: never grade as if no limit was hit.
   */
  limitEvents(): Promise<LimitEvent[]>;
  /** Environment variables removed or changed on their way to the student, with reasons. */
  readonly envRemovals: readonly EnvRemoval[];
  /**
   * Run a command in the student's persistent shell. Outcomes (timeouts, exits, a killed shell)
   * are data. When every process of the sandbox has been stopped since the last command (a reap
   * between steps, the OOM killer, `restart()`), the world is rebuilt first for the same uid,
   * working directory and limits, and the result says so (`restarted`, `notice`). Commands are
   * queued.
   * @throws SandboxError `DESTROYED` after destroy() (a caller bug); `SETUP_FAILED` or
   *   `NETWORK_NOT_ISOLATED` when a needed rebuild fails (a host fault, never the student's doing).
   * @throws BadArgumentError for a non-string command, a NUL byte or invalid options.
   */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** File tools acting as the student inside the sandbox (a dead world is rebuilt first, as for exec). */
  readonly files: SandboxFiles;
  /**
   * Rebuild the student's world now: every process of the sandbox is killed, then new
   * namespaces, mounts, shell and a new network check for the same uid, working directory (its
   * files kept) and limits group. exec() does this by itself when needed; call it to pay the
   * cost (and see a host fault) between steps. The next exec result's notice tells the student.
   * Queued behind running commands.
   * @throws SandboxError `DESTROYED` after destroy(); `SETUP_FAILED`, `NETWORK_NOT_ISOLATED`.
   */
  restart(): Promise<RestartReport>;
  /**
   * Kill every student process and prove it (before custody). A confirmed record is returned
   * again until the sandbox is used again (the next exec rebuilds it, and a later reap reaps
   * that world); after an unconfirmed one, the next call reaps again. destroy() calls it.
   */
  reap(): Promise<ConfirmedReapRecord>;
  /** Remove everything: processes, namespaces, mounts, cgroups, veth, identity. Idempotent (the same report). */
  destroy(): Promise<TeardownReport>;
}
