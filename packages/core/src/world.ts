import type { MisbehaviorRecord } from '@karotte/base';
import type { LimitHit, NetworkCheck, StudentHandle, SubmissionCollector } from '@karotte/grader';
import type { SandboxFiles } from '@karotte/sandbox';

/** The outcome of one command in the student's shell. */
export interface ShellOutcome {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly truncated: boolean;
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  readonly durationMs: number;
  /** Set when the shell died and was restarted, with what the student is told. */
  readonly note?: string;
}

/**
 * The file operations the tool profiles use, each acting with the student's rights inside the
 * student's world (`@karotte/sandbox`'s file tools): bounded, non-blocking, regular files only.
 * Outcomes (a refused path, a file too large) are results, never exceptions.
 */
export type StudentFiles = Pick<
  SandboxFiles,
  'view' | 'readText' | 'readBytes' | 'write' | 'delete' | 'list'
>;

/**
 * The student's world as an episode needs it: a seam over `@karotte/sandbox` so the episode
 * logic is written once, and the world can be provided by another backend.
 */
export interface StudentWorld {
  readonly uid: number;
  /** Host path of the student's working directory (where submission paths are relative to). */
  readonly workDir: string;
  /** What the grader needs to reap and collect. */
  readonly handle: StudentHandle;
  /** The network check made before the first step. */
  readonly network: NetworkCheck;
  /**
   * How the grader reaps the student and collects the submission. A world that can reap its
   * own student best (the sandbox kills its namespace init first, so every process dies while
   * its parents can still wait for it) gives its own; when absent, the grader's default
   * collector reaps by uid and group.
   */
  readonly collector?: SubmissionCollector;
  /** Run one command in the persistent shell, as the student. */
  exec(command: string, options: { timeoutMs: number; abortSignal?: AbortSignal }): Promise<ShellOutcome>;
  /**
   * File tools acting as the student (the `karotte`, `anthropic` and `openai` tool profiles'
   * file tools use them). A world without them offers only the shell.
   */
  readonly files?: StudentFiles;
  /**
   * Restart the student's shell (the `anthropic` profile's `bash {restart: true}`): every
   * process of the world is stopped and a new shell starts in the working directory, whose
   * files are kept. A rejection is a host fault.
   */
  restart?(): Promise<void>;
  /**
   * Limits the student hit so far (memory, pids, disk): the record for the verdict, and the
   * misbehavior each one is (a limit hit scores 0, per the contract). A rejection is a host
   * fault: the episode ends as `error`, never graded as if no limit was hit.
   */
  limitHits(): Promise<{ hits: LimitHit[]; misbehavior: MisbehaviorRecord[] }>;
  /** Tear everything down. Idempotent. */
  destroy(): Promise<void>;
}
