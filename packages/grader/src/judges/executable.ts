import { constants } from 'node:fs';
import {
  chmod,
  chown,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  realpath,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  BadArgumentError,
  escapeForDisplay,
  GiB,
  KiB,
  MiB,
  parseOptions,
  resolveTrustedBinary,
} from '@karotte/base';
import {
  ALWAYS_COVERED,
  buildSyscallFilter,
  hostViewHidden,
  IMAGE_ROOT,
  imageBinds,
  planMounts,
  resolveSandboxBinaries,
  type IdentityLease,
  type MountPlan,
  type SandboxBinaries,
  type TmpfsMount,
} from '@karotte/sandbox/confinement';
import { z } from 'zod';
import { GraderError } from '../errors.js';
import { errorReport, failedReport, faultFromError, scoredReport } from '../judge.js';
import { PREPARED_MAX_AGE_MS } from '../judge.js';
import type { Judge, JudgeContext, PreparedJudge, PrepareOptions, ReportBase } from '../judge.js';
import { createLimitsCgroup } from '../runner/group.js';
import type { CgroupStats, GraderCgroup } from '../runner/cgroup.js';
import { copyTree } from '../runner/copy-tree.js';
import { allocateGraderIdentity, GRADER_UID_RANGE } from '../runner/identity.js';
import { launch, openWorld } from '../runner/launch.js';
import type { ConfinedSpec, LaunchResult } from '../runner/launch.js';
import { isWithin, runTrusted } from '../runner/mounts.js';
import { assertTrustedInterpreter, SCRATCH_DIRS } from './interpreter.js';
import { maxScoreFileBytes, readScoreFile, scoreLimitsSchema } from '../score.js';
import type { Confinement, JudgeReport, LimitHit } from '../verdict.js';

/** Environment variable names a caller may never set for a grader (loader and interpreter hooks). */
const FORBIDDEN_ENV =
  /^(LD_.*|NODE_OPTIONS|NODE_PATH|NODE_EXTRA_CA_CERTS|PYTHON.*|PERL5?LIB|PERL5OPT|RUBYOPT|RUBYLIB|BASH_ENV|ENV|IFS|GCONV_PATH|LOCPATH|HOSTALIASES|MALLOC_.*|GLIBC_TUNABLES|TMPDIR|HOME|PATH|KAROTTE_.*)$/;

/** The PATH a grader sees: root-owned system directories only. */
const GRADER_PATH = '/usr/local/bin:/usr/bin:/bin';

export const executableJudgeOptionsSchema = z
  .object({
    /** Absolute path of the grader program (a JavaScript module for the default interpreter). Exactly one of `program` and `command`. */
    program: z
      .string()
      .refine((p) => path.isAbsolute(p), 'must be an absolute path')
      .optional(),
    /**
     * The grader's argv instead of `program` (a grader in any language: `["python3",
     * "grade.py"]`), run as the grader's fresh uid with the copy of `taskDir` as its working
     * directory. A bare name is looked up in `searchPath`: on the host view it must resolve to
     * a trusted binary (root-owned system directories), in an image the image's own.
     */
    command: z
      .array(
        z
          .string()
          .min(1)
          .refine((a) => !a.includes('\0'), 'must not contain NUL'),
      )
      .min(1)
      .max(256)
      .optional(),
    /**
     * For `command`: a directory copied (read-only to the grader, without its top-level
     * `student/` and `hidden/`, execute bits kept) as the command's working directory.
     */
    taskDir: z
      .string()
      .refine((p) => path.isAbsolute(p), 'must be an absolute path')
      .optional(),
    /**
     * More top-level names of `taskDir` left out of its copy (the task's image, when it lies
     * in the task directory). @default []
     */
    taskDirExclude: z
      .array(
        z
          .string()
          .min(1)
          .regex(/^[^/]+$/u, 'must be a top-level name'),
      )
      .max(64)
      .default([]),
    /**
     * An image's unpacked tree (`importImage()` of `@karotte/sandbox/image`): the grader's root
     * is that image, as the student's is (isolation `sandbox` only). Inside it the inputs are
     * at `/karotte/submission`, `/karotte/hidden`, the score file at `/karotte/out/score.json`,
     * the task copy at `/karotte/task`, HOME and TMPDIR `/tmp`.
     */
    rootfs: z
      .string()
      .refine((p) => path.isAbsolute(p), 'must be an absolute path')
      .optional(),
    /**
     * PATH of a `command` grader (its lookup of a bare name). @default '/usr/local/bin:/usr/bin:/bin'
     */
    searchPath: z
      .string()
      .regex(/^\/[^:\0]*(?::\/[^:\0]*)*$/u, 'must be absolute directories joined by ":"')
      .optional(),
    /**
     * Absolute path of the interpreter. Never looked up on PATH. It must be a system install
     * (see `checkGraderInterpreter`): the path and its resolved target root-owned and
     * not group/other-writable along every ancestor directory, in no hidden directory (no
     * `~/.nvm`, `~/.pyenv`), and for `sandbox` reachable by the grader's fresh uid and not in
     * `/tmp`. The default, the harness's own Node.js, is held to the same rule: run the harness
     * on a Node.js installed by root in a system directory (`/usr/bin`, `/usr/local`, `/opt`).
     * The judge's `preflight()` checks it before an episode starts.
     * @default process.execPath (the harness's own Node.js)
     */
    interpreter: z
      .string()
      .refine((p) => path.isAbsolute(p), 'must be an absolute path')
      .optional(),
    /**
     * Arguments after the program.
     * @default []
     */
    args: z.array(z.string()).default([]),
    /**
     * Name in reports.
     * @default `executable:<program basename>`
     */
    name: z.string().min(1).optional(),
    /**
     * Wall-clock limit; past it the whole process tree is killed. The one default of a grader's
     * time (`@karotte/core` leaves a task's `grader.timeoutMs` unset to this).
     * @default 600000 (10 minutes)
     */
    timeoutMs: z.number().int().positive().max(86_400_000).default(600_000),
    /**
     * Memory limit of the grader's cgroup (its private tmpfs pages count too).
     * @default 1073741824 (1 GiB)
     */
    memoryBytes: z
      .number()
      .int()
      .min(16 * MiB)
      .default(GiB),
    /**
     * Process limit of the grader's cgroup.
     * @default 256
     */
    pids: z.number().int().min(8).max(1_000_000).default(256),
    /**
     * Cap on each of stdout and stderr; past it the grader is killed (`OUTPUT_LIMIT`).
     * @default 1048576 (1 MiB)
     */
    outputBytes: z.number().int().positive().default(MiB),
    /**
     * Size of each private tmpfs (`/tmp`, `/var/tmp`, `/dev/shm`, HOME).
     * @default memoryBytes
     */
    tmpfsBytes: z.number().int().min(MiB).optional(),
    /**
     * RLIMIT_NOFILE of the grader.
     * @default 1024
     */
    nofile: z.number().int().min(16).max(1_048_576).default(1024),
    /**
     * Extra environment variables. Loader and interpreter hooks (`LD_*`, `NODE_OPTIONS`,
     * `PYTHON*`, ...), `PATH`, `HOME`, `TMPDIR` and `KAROTTE_*` are refused.
     * @default {}
     */
    env: z
      .record(
        z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain variable name')
          .refine((n) => !FORBIDDEN_ENV.test(n), 'is reserved or a loader/interpreter hook'),
        z.string().refine((v) => !v.includes('\0'), 'must not contain NUL'),
      )
      .default({}),
    /**
     * `sandbox`: a fresh unprivileged uid in its own pid, mount, ipc, uts and network namespaces
     * and cgroup, reading copies only (needs root). `process`: a child of the current user in
     * its own process group, killed by group; no memory or pids limit (for hosts without root).
     * @default 'sandbox'
     */
    isolation: z.enum(['sandbox', 'process']).default('sandbox'),
    /**
     * Where the private grading directories are created: a root-owned directory not under
     * `/tmp`, `/var/tmp` or `/dev/shm` (those are replaced by private tmpfs in the sandbox).
     * @default '/var/lib/karotte/grader' for `sandbox`, `os.tmpdir()` for `process`
     */
    workDir: z
      .string()
      .refine((p) => path.isAbsolute(p), 'must be an absolute path')
      .optional(),
    /**
     * Directory of uid lock entries for the fresh grader uids.
     * @default '/run/karotte/grader-uids'
     */
    uidLockDir: z
      .string()
      .refine((p) => path.isAbsolute(p), 'must be an absolute path')
      .default('/run/karotte/grader-uids'),
    /**
     * Range of fresh grader uids.
     * @default { first: 1900000000, count: 100000000 }
     */
    uidRange: z
      .object({ first: z.number().int().min(1000), count: z.number().int().positive() })
      .strict()
      .refine((r) => r.first + r.count <= 4_294_967_294, 'must end below 4294967294')
      .default({ ...GRADER_UID_RANGE }),
    /**
     * Bounds of the score file.
     * @default { maxMetadataBytes: 65536, maxMetadataDepth: 8 }
     */
    score: scoreLimitsSchema.default({ maxMetadataBytes: 64 * KiB, maxMetadataDepth: 8 }),
  })
  .strict()
  .superRefine((options, ctx) => {
    if ((options.program === undefined) === (options.command === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['program'], message: 'give exactly one of program and command' });
    }
    if (options.rootfs !== undefined && options.isolation === 'process') {
      ctx.addIssue({ code: 'custom', path: ['rootfs'], message: 'an image root needs isolation "sandbox"' });
    }
  });

export type ExecutableJudgeOptions = z.input<typeof executableJudgeOptionsSchema>;
type Resolved = z.output<typeof executableJudgeOptionsSchema>;

const TAIL_BYTES = 4 * KiB;

/**
 * A judge that runs a grader program under the score-file protocol: the program gets
 * `KAROTTE_SUBMISSION_DIR`, `KAROTTE_HIDDEN_DIR` and `KAROTTE_SCORE_FILE` in a clean
 * environment, must exit 0 and write `{"score": <finite number in [0,1]>, "metadata"?: {...}}`.
 *
 * By default it runs in its own sandbox: a fresh unprivileged uid with read access to copies
 * of the custody directory, the hidden data and the program only; private tmpfs for HOME and
 * the scratch places; every other mount read-only; no network; its own pid namespace and
 * cgroup (memory and process limits, read back), killed as a whole at the timeout.
 *
 * @throws BadArgumentError on invalid options.
 */
export function createExecutableJudge(options: ExecutableJudgeOptions): Judge {
  const resolved = parseOptions(executableJudgeOptionsSchema, options, 'executable judge options');
  const workDir =
    resolved.workDir ?? (resolved.isolation === 'sandbox' ? '/var/lib/karotte/grader' : os.tmpdir());
  if (resolved.isolation === 'sandbox' && SCRATCH_DIRS.some((dir) => isWithin(workDir, dir))) {
    throw new BadArgumentError(
      `workDir ${workDir} is under a scratch directory that the sandbox replaces with a private tmpfs`,
      { field: 'workDir' },
    );
  }
  if (
    resolved.program !== undefined &&
    resolved.interpreter === undefined &&
    !/\.(?:mjs|cjs|js)$/.test(resolved.program)
  ) {
    throw new BadArgumentError(
      `program ${resolved.program} is not a JavaScript module: name its interpreter (an absolute path)`,
      { field: 'interpreter' },
    );
  }
  const name =
    resolved.name ??
    (resolved.program === undefined
      ? `command:${path.basename(resolved.command![0]!)}`
      : `executable:${path.basename(resolved.program)}`);
  return {
    kind: 'executable',
    name,
    evaluate: (context) => runExecutable(resolved, workDir, name, context),
    // Everything but the episode's inputs made ahead, the grader's world started: the setup
    // overlaps the student's turns instead of following them.
    prepare: (options = {}) => prepareExecutable(resolved, workDir, name, options),
    // The same checks as the start of every evaluation, for a caller that wants to refuse an
    // episode before it runs rather than learn at its end that it cannot be graded.
    preflight: async () => {
      if (resolved.program === undefined) {
        commandArgv(resolved);
        if (resolved.taskDir !== undefined) await checkDir(resolved.taskDir);
        return;
      }
      await checkProgram(resolved.program);
      await assertTrustedInterpreter(resolved.interpreter ?? process.execPath, resolved.isolation);
    },
  };
}

function confinementOf(resolved: Resolved, uid: number | null): Confinement {
  if (resolved.isolation === 'sandbox') {
    return {
      level: 'sandbox',
      uid,
      namespaces: ['pid', 'mount', 'ipc', 'uts', 'net'],
      memory: 'prevented',
      pids: 'prevented',
      wallTime: 'prevented',
      output: 'prevented',
      networkIsolated: true,
    };
  }
  return {
    level: 'process',
    uid,
    namespaces: [],
    memory: 'not_supported',
    pids: 'not_supported',
    wallTime: 'detected_and_reaped',
    output: 'prevented',
    networkIsolated: false,
  };
}

async function checkProgram(program: string): Promise<void> {
  let stats;
  try {
    stats = await stat(program);
  } catch (error) {
    throw new GraderError('GRADER_NOT_FOUND', `grader program ${program} does not exist`, { cause: error });
  }
  if (!stats.isFile())
    throw new GraderError('GRADER_NOT_FOUND', `grader program ${program} is not a regular file`);
}

async function checkDir(dir: string): Promise<void> {
  const stats = await stat(dir).catch(() => undefined);
  if (stats?.isDirectory() !== true)
    throw new GraderError('GRADER_NOT_FOUND', `task directory ${dir} is not a directory`);
}

/**
 * The argv of a `command` grader: on the host view a bare name becomes the trusted binary of
 * that name (never a PATH lookup of the harness's); in an image the image's PATH finds it.
 */
function commandArgv(resolved: Resolved): [string, ...string[]] {
  const [first, ...rest] = resolved.command!;
  if (resolved.rootfs !== undefined || first!.includes('/')) return [first!, ...rest];
  try {
    return [resolveTrustedBinary(first!), ...rest];
  } catch (error) {
    throw new GraderError(
      'GRADER_NOT_FOUND',
      `the grader command ${first!} is not a trusted binary of this host (root-owned system directories)`,
      { cause: error },
    );
  }
}

/** Where a grader in an image finds its inputs (mount points every imported image has). */
const IMAGE_PLACES = {
  submission: '/karotte/submission',
  hidden: '/karotte/hidden',
  task: '/karotte/task',
  out: '/karotte/out',
} as const;

/** Make sure the base directory is root-owned and not writable by anyone else. */
async function prepareWorkDir(workDir: string, sandbox: boolean): Promise<void> {
  if (!sandbox) return;
  await mkdir(workDir, { recursive: true, mode: 0o711 });
  const stats = await lstat(workDir);
  if (!stats.isDirectory() || stats.uid !== 0 || (stats.mode & 0o022) !== 0) {
    throw new GraderError(
      'SETUP_FAILED',
      `${workDir} must be a root-owned directory not writable by group or others`,
    );
  }
}

/** The trusted binaries of the confinement (the student sandbox's own list). */
function resolveBinaries(): SandboxBinaries {
  try {
    return resolveSandboxBinaries();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new GraderError(
      'CONFINEMENT_UNAVAILABLE',
      `a binary the grader sandbox needs is missing: ${reason}`,
      {
        cause: error,
      },
    );
  }
}

/** Where one grading run's inputs are, inside its private directory. */
interface GradingPaths {
  readonly submissionDir: string;
  readonly hiddenDir: string;
  /** The program's copy; undefined for a `command` grader. */
  readonly programCopy: string | undefined;
  /** The task directory's copy (a `command` grader's working directory), when there is one. */
  readonly taskCopy: string | undefined;
  readonly home: string;
}

/**
 * Make the run's private inputs that do not depend on the episode: copies of the program and
 * the task directory, owned by root with the grader's gid (readable by it, never writable),
 * HOME, and the empty directories the submission and hidden data are copied into later (see
 * {@link copyEpisodeInputs}), root's alone until then.
 */
async function makeInputs(
  resolved: Resolved,
  root: string,
  owner: { uid: number; gid: number },
  modes: { dirMode: number; fileMode: number },
): Promise<GradingPaths> {
  const submissionDir = path.join(root, 'submission');
  const hiddenDir = path.join(root, 'hidden');
  const programDir = path.join(root, 'program');
  const home = path.join(root, 'home');
  await mkdir(submissionDir, { mode: 0o700 });
  await mkdir(hiddenDir, { mode: 0o700 });
  let programCopy: string | undefined;
  if (resolved.program !== undefined) {
    programCopy = path.join(programDir, path.basename(resolved.program));
    await mkdir(programDir, { mode: 0o700 });
    await copyFile(resolved.program, programCopy, constants.COPYFILE_EXCL);
    await chownAndMode(programCopy, owner, modes.fileMode);
    await chownAndMode(programDir, owner, modes.dirMode);
  }
  let taskCopy: string | undefined;
  if (resolved.taskDir !== undefined) {
    taskCopy = path.join(root, 'task');
    const copied = await copyTree(resolved.taskDir, taskCopy, {
      ...owner,
      ...modes,
      maxEntries: 100_000,
      keepExecutable: true,
      excludeTopLevel: ['student', 'hidden', ...resolved.taskDirExclude],
    });
    if (!copied.ok)
      throw new GraderError('SETUP_FAILED', `cannot copy the task directory: ${copied.message}`);
    await chownAndMode(taskCopy, owner, modes.dirMode);
  }
  await mkdir(home, { mode: 0o700 });
  return { submissionDir, hiddenDir, programCopy, taskCopy, home };
}

/**
 * Copy the custody directory and the hidden data into the run's empty input directories,
 * with the grader's group (readable by it, never writable). A missing input stays an empty
 * directory.
 */
async function copyEpisodeInputs(
  context: JudgeContext,
  paths: GradingPaths,
  owner: { uid: number; gid: number },
  modes: { dirMode: number; fileMode: number },
): Promise<void> {
  const into = { ...owner, ...modes, maxEntries: 1_000_000, intoEmptyDirectory: true };
  if (context.submissionDir !== null) {
    const copied = await copyTree(context.submissionDir, paths.submissionDir, into);
    if (!copied.ok)
      throw new GraderError('SETUP_FAILED', `cannot copy the custody directory: ${copied.message}`);
  }
  if (context.hiddenDir !== null) {
    let copied;
    try {
      copied = await copyTree(context.hiddenDir, paths.hiddenDir, into);
    } catch (error) {
      throw new GraderError(
        'HIDDEN_DATA_UNAVAILABLE',
        `cannot copy hidden data ${context.hiddenDir}: ${String(error)}`,
        { cause: error },
      );
    }
    if (!copied.ok)
      throw new GraderError('HIDDEN_DATA_UNAVAILABLE', `cannot copy hidden data: ${copied.message}`);
  }
  await chownAndMode(paths.submissionDir, owner, modes.dirMode);
  await chownAndMode(paths.hiddenDir, owner, modes.dirMode);
}

/**
 * The grader's file system: private tmpfs over the scratch places and HOME, the score tmpfs
 * the one host mount left writable, a world-own /dev, and covers over Karotte's state and the
 * host outside its system part, except where the grader's own inputs live.
 */
async function graderMountPlan(
  resolved: Resolved,
  identity: IdentityLease,
  root: string,
  interpreter: string,
  paths: GradingPaths & { readonly scoreDir: string; readonly scoreFile: string },
): Promise<MountPlan> {
  const { submissionDir, hiddenDir, programCopy, taskCopy, scoreDir, scoreFile, home } = paths;
  const tmpfsBytes = resolved.tmpfsBytes ?? resolved.memoryBytes;
  const tmpfs: TmpfsMount[] = [];
  for (const dir of SCRATCH_DIRS) {
    const stats = await lstat(dir).catch(() => undefined);
    if (stats?.isDirectory() === true) tmpfs.push({ path: dir, sizeBytes: tmpfsBytes, mode: '1777' });
  }
  tmpfs.push({ path: home, sizeBytes: tmpfsBytes, mode: '0700', uid: identity.uid, gid: identity.gid });
  // Read access to the copies only: Karotte's state and the host outside its system part
  // are covered, except where the grader's own inputs live (a work directory configured
  // under /srv, say). /home too: the grader's HOME is a tmpfs in its own work directory,
  // and users' home directories (a checkout under /home/<user>) are no business of a
  // grader. The interpreter twice: the grader starts the path as given (a link) and the
  // kernel then opens its target; neither may be covered.
  const needed = [
    interpreter,
    ...(await Promise.all(
      [submissionDir, hiddenDir, programCopy, taskCopy, interpreter, scoreFile, home]
        .filter((p): p is string => p !== undefined)
        .map((p) => realpath(p).catch(() => p)),
    )),
  ];
  const covers = [...ALWAYS_COVERED, ...hostViewHidden('system'), '/home'].filter(
    (dir) => !needed.some((p) => p === dir || p.startsWith(`${dir}/`)),
  );
  const emptyFile = path.join(root, 'empty');
  await writeFile(emptyFile, '', { mode: 0o000, flag: 'wx' });
  // In an image: the tree read-only as the grader's root, the world's /proc, /dev, scratch
  // tmpfs and the inputs bound into it at fixed places (IMAGE_PLACES).
  const image =
    resolved.rootfs === undefined
      ? undefined
      : imageBinds(
          resolved.rootfs,
          [
            { source: submissionDir, target: IMAGE_PLACES.submission, writable: false, noexec: true },
            { source: hiddenDir, target: IMAGE_PLACES.hidden, writable: false, noexec: true },
            ...(taskCopy === undefined
              ? []
              : [{ source: taskCopy, target: IMAGE_PLACES.task, writable: false }]),
            { source: scoreDir, target: IMAGE_PLACES.out, writable: true },
          ],
          { dev: true },
        );
  return planMounts({
    hostname: 'karotte-grader',
    loopback: true,
    dev: { maxPtys: 8 },
    tmpfs,
    earlyBinds: image?.earlyBinds ?? [],
    binds: image?.binds ?? [],
    keepWritable: [scoreDir],
    covers,
    emptyFile,
  });
}

/**
 * One grading run's host side. {@link openRun} makes everything up to the program's start
 * except the copies of the episode's inputs (the private directory, uid, cgroup, score
 * mount, program and task copies, mount plan, and, for a prepared run, the started world);
 * {@link gradeRun} copies the inputs and runs the program once; {@link closeRun} releases it.
 */
interface GradingRun {
  readonly resolved: Resolved;
  /** When the report's clock starts: the evaluation's call (a prepared run's too). */
  startedAt: number;
  /** How long the setup made ahead took (a prepared run), else undefined. */
  preparedMs?: number;
  base: ReportBase;
  root?: string | undefined;
  identity?: IdentityLease | undefined;
  cgroup?: GraderCgroup | undefined;
  scoreMounted: boolean;
  binaries?: SandboxBinaries;
  /** Set once openRun finished. */
  ready?: {
    readonly paths: GradingPaths & { readonly scoreDir: string; readonly scoreFile: string };
    readonly owner: { uid: number; gid: number };
    readonly modes: { dirMode: number; fileMode: number };
    readonly argv: [string, ...string[]];
    readonly env: Record<string, string>;
    readonly cwd: string;
    readonly sandbox: ConfinedSpec | null;
    /** When openRun finished (a prepared run's age counts from here). */
    readonly at: number;
  };
  launched?: { readyAt: number };
  exited?: number;
}

function newRun(resolved: Resolved, name: string): GradingRun {
  const startedAt = performance.now();
  return {
    resolved,
    startedAt,
    base: { name, kind: 'executable', confinement: confinementOf(resolved, null), startedAt },
    scoreMounted: false,
  };
}

/**
 * Make a run ready to grade (see {@link GradingRun}). With `world`, the grader's world is
 * started too (a prepared run); without, the launch makes it. Throws the run's fault; what
 * it made is released by closeRun.
 */
async function openRun(
  run: GradingRun,
  workDir: string,
  options: { readonly world: boolean; readonly abortSignal: AbortSignal },
): Promise<void> {
  const { resolved } = run;
  const sandboxed = resolved.isolation === 'sandbox';
  const interpreter = resolved.interpreter ?? process.execPath;
  if (sandboxed && process.getuid?.() !== 0) {
    throw new GraderError(
      'CONFINEMENT_UNAVAILABLE',
      'the grader sandbox needs root (use isolation: "process" without it)',
    );
  }
  if (resolved.program !== undefined) {
    await checkProgram(resolved.program);
    await assertTrustedInterpreter(interpreter, resolved.isolation);
  } else if (resolved.taskDir !== undefined) await checkDir(resolved.taskDir);
  const commandLine = resolved.command === undefined ? undefined : commandArgv(resolved);
  if (sandboxed) {
    run.binaries = resolveBinaries();
    if (process.arch !== 'x64') {
      throw new GraderError(
        'CONFINEMENT_UNAVAILABLE',
        `the grader's syscall filter is assembled for x86-64 only (this host is ${process.arch})`,
      );
    }
  }
  await prepareWorkDir(workDir, sandboxed);

  if (sandboxed) {
    run.identity = await allocateGraderIdentity({
      lockDir: resolved.uidLockDir,
      ...resolved.uidRange,
      places: { workDir, cgroupRoot: '/sys/fs/cgroup' },
    });
  }
  const { identity, binaries } = run;
  // The uid in the name says whose private directory it is (for cleanup and audits).
  const root = await mkdtemp(path.join(workDir, `karotte-grade-${identity?.uid ?? 'process'}-`));
  run.root = root;
  if (sandboxed && identity !== undefined) {
    run.base = { ...run.base, confinement: confinementOf(resolved, identity.uid) };
    run.cgroup = await createLimitsCgroup({
      memoryBytes: resolved.memoryBytes,
      pids: resolved.pids,
      nofile: resolved.nofile,
      label: String(identity.uid),
    });
    // The grader's uid must traverse the root to reach its copies; nothing here is listable.
    await chmod(root, 0o711);
  }
  const owner = { uid: process.getuid?.() ?? 0, gid: identity?.gid ?? process.getgid?.() ?? 0 };
  const modes = sandboxed ? { dirMode: 0o750, fileMode: 0o640 } : { dirMode: 0o700, fileMode: 0o600 };
  const inputs = await makeInputs(resolved, root, owner, modes);
  const scoreDir = path.join(root, 'score');

  // The score channel: a fresh, empty directory only the grader can write. In a sandbox it
  // is a small tmpfs owned by the grader's uid (bounded in bytes and inodes, so the grader
  // cannot fill the host's disk through it); nothing can be planted there in advance.
  await mkdir(scoreDir, { mode: 0o700 });
  const scoreFile = path.join(scoreDir, 'score.json');
  if (sandboxed && identity !== undefined && binaries !== undefined) {
    const size = Math.max(2 * maxScoreFileBytes(resolved.score) + 64 * KiB, 256 * KiB);
    await runTrusted(binaries.mount, [
      '-t',
      'tmpfs',
      '-o',
      `size=${size},nr_inodes=64,mode=0700,uid=${identity.uid},gid=${identity.gid},nosuid,nodev,noexec`,
      'karotte-grader-score',
      scoreDir,
    ]);
    run.scoreMounted = true;
  }
  const paths = { ...inputs, scoreDir, scoreFile };

  // In an image the grader names its inputs by the places they are bound at.
  const inImage = resolved.rootfs !== undefined;
  const env: Record<string, string> = {
    ...resolved.env,
    PATH: commandLine === undefined ? GRADER_PATH : (resolved.searchPath ?? GRADER_PATH),
    HOME: inImage ? '/tmp' : inputs.home,
    TMPDIR: sandboxed ? '/tmp' : inputs.home,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONNOUSERSITE: '1',
    KAROTTE_SUBMISSION_DIR: inImage ? IMAGE_PLACES.submission : inputs.submissionDir,
    KAROTTE_HIDDEN_DIR: inImage ? IMAGE_PLACES.hidden : inputs.hiddenDir,
    KAROTTE_SCORE_FILE: inImage ? `${IMAGE_PLACES.out}/score.json` : scoreFile,
  };

  // The image's mount point: an empty directory of the host's /run (gone after a reboot).
  if (inImage) await mkdir(IMAGE_ROOT, { recursive: true, mode: 0o755 });
  let sandbox: ConfinedSpec | null = null;
  if (sandboxed && identity !== undefined && run.cgroup !== undefined && binaries !== undefined) {
    sandbox = {
      uid: identity.uid,
      cgroup: run.cgroup,
      plan: await graderMountPlan(resolved, identity, root, interpreter, paths),
      binaries,
      syscallFilter: buildSyscallFilter(),
      ...(inImage ? { studentRoot: IMAGE_ROOT } : {}),
    };
    if (options.world) {
      const opened = await openWorld(sandbox, options.abortSignal);
      if ('failed' in opened) {
        throw new GraderError(
          opened.aborted ? 'ABORTED' : 'SETUP_FAILED',
          opened.aborted
            ? 'the grader setup was cancelled'
            : `the grader could not be started: ${escapeForDisplay(opened.failed)}`,
        );
      }
      sandbox = { ...sandbox, world: opened.world };
    }
  }
  const taskCopy = inputs.taskCopy;
  run.ready = {
    paths,
    owner,
    modes,
    argv: commandLine ?? [interpreter, inputs.programCopy!, ...resolved.args],
    env,
    cwd: inImage ? (taskCopy === undefined ? '/tmp' : IMAGE_PLACES.task) : (taskCopy ?? inputs.home),
    sandbox,
    at: performance.now(),
  };
}

/** Copy the episode's inputs into a ready run, run the program once, and judge what it wrote. */
async function gradeRun(run: GradingRun, context: JudgeContext): Promise<JudgeReport> {
  const { resolved } = run;
  const ready = run.ready!;
  await copyEpisodeInputs(context, ready.paths, ready.owner, ready.modes);
  // The launch owns (and stops) a world made ahead from here on.
  const sandbox = ready.sandbox;
  run.ready = { ...ready, sandbox: sandbox === null ? null : { ...sandbox, world: undefined } };
  const spawnedAt = performance.now();
  const result = await launch({
    argv: ready.argv,
    env: ready.env,
    cwd: ready.cwd,
    timeoutMs: resolved.timeoutMs,
    outputBytes: resolved.outputBytes,
    tailBytes: TAIL_BYTES,
    sandbox,
    abortSignal: context.abortSignal,
  });
  run.exited = performance.now();
  run.launched = { readyAt: spawnedAt + (result.readyMs ?? 0) };

  let stats: CgroupStats = { memoryPeakBytes: null, oomKills: 0, hostOomKills: 0, pidsLimitHits: 0 };
  let readBack = { memoryBytes: resolved.memoryBytes, pids: resolved.pids };
  const cgroup = run.cgroup;
  if (cgroup !== undefined) {
    stats = await cgroup.stats();
    readBack = cgroup.limits;
    // Whatever the program left behind dies here; the verdict waits for the proof.
    const emptied = await cgroup.destroy();
    run.cgroup = undefined;
    if (!emptied) {
      throw new GraderError('SETUP_FAILED', "the grader's processes survived a cgroup kill (a host fault)");
    }
    if (stats.hostOomKills > 0 && stats.oomKills === 0) {
      throw new GraderError(
        'SETUP_FAILED',
        `the kernel's OOM killer killed the grader while it was within its memory limit (the host or a parent cgroup ran out of memory): a host fault, not the grader's`,
      );
    }
  }
  run.base = { ...run.base, limitHits: limitHits(resolved, readBack, result, stats) };
  return judgeOutcome(run.base, context, resolved, result, stats, ready.paths.scoreFile);
}

/** Release what a run holds (a world not launched into, cgroup, score mount, directory, uid). */
async function closeRun(run: GradingRun): Promise<void> {
  let cleanupFault: string | undefined;
  const world = run.ready?.sandbox?.world;
  if (world !== undefined) {
    run.ready = { ...run.ready!, sandbox: { ...run.ready!.sandbox!, world: undefined } };
    await world.stop();
  }
  if (run.cgroup !== undefined) {
    const emptied = await run.cgroup.destroy().catch(() => false);
    run.cgroup = undefined;
    if (!emptied) cleanupFault = 'grader cgroup could not be emptied';
  }
  const root = run.root;
  if (run.scoreMounted && root !== undefined) {
    run.scoreMounted = false;
    const umount = resolveTrustedBinary('umount');
    await runTrusted(umount, [path.join(root, 'score')]).catch(() =>
      runTrusted(umount, ['-l', path.join(root, 'score')]).catch(() => {
        cleanupFault = 'score tmpfs could not be unmounted';
      }),
    );
  }
  if (root !== undefined && cleanupFault === undefined) {
    run.root = undefined;
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
  if (run.identity !== undefined && cleanupFault === undefined) {
    run.identity.release();
    run.identity = undefined;
  }
}

/** The report of a finished run, after its release, with what each phase cost. */
async function finishRun(run: GradingRun, outcome: JudgeReport): Promise<JudgeReport> {
  await closeRun(run);
  // After the teardown, so the report says what the whole run cost, phase by phase.
  const finished = performance.now();
  const { launched, exited } = run;
  const timings =
    launched === undefined || exited === undefined
      ? undefined
      : {
          setupMs: round(launched.readyAt - run.startedAt),
          runMs: round(exited - launched.readyAt),
          teardownMs: round(finished - exited),
          ...(run.preparedMs === undefined ? {} : { preparedMs: round(run.preparedMs) }),
        };
  return {
    ...outcome,
    durationMs: round(finished - run.startedAt),
    ...(timings === undefined ? {} : { timings }),
  };
}

async function runExecutable(
  resolved: Resolved,
  workDir: string,
  name: string,
  context: JudgeContext,
): Promise<JudgeReport> {
  const run = newRun(resolved, name);
  let outcome: JudgeReport;
  try {
    await openRun(run, workDir, { world: false, abortSignal: context.abortSignal });
    outcome = await gradeRun(run, context);
  } catch (error) {
    outcome = errorReport(run.base, faultFromError(error));
  }
  return finishRun(run, outcome);
}

/**
 * The judge with one run made ahead (see {@link Judge.prepare}): its first evaluation grades
 * in that run when it still holds (its world lives, younger than `maxAgeMs`), else in a run
 * made then, like every later evaluation.
 */
async function prepareExecutable(
  resolved: Resolved,
  workDir: string,
  name: string,
  options: PrepareOptions,
): Promise<PreparedJudge> {
  const abortSignal = options.abortSignal ?? new AbortController().signal;
  const maxAgeMs = options.maxAgeMs ?? PREPARED_MAX_AGE_MS;
  let run: GradingRun | undefined = newRun(resolved, name);
  try {
    await openRun(run, workDir, { world: resolved.isolation === 'sandbox', abortSignal });
  } catch (error) {
    await closeRun(run);
    throw error;
  }
  run.preparedMs = run.ready!.at - run.startedAt;
  const take = (): GradingRun | undefined => {
    const taken = run;
    run = undefined;
    return taken;
  };
  /** The run made ahead still holds: unused, younger than maxAgeMs, its world alive. */
  const holds = (made: GradingRun | undefined): made is GradingRun => {
    const world = made?.ready?.sandbox?.world;
    return (
      made !== undefined &&
      performance.now() - made.ready!.at <= maxAgeMs &&
      (world === undefined || world.alive())
    );
  };
  return {
    kind: 'executable',
    name,
    evaluate: async (context) => {
      const taken = take();
      if (!holds(taken)) {
        if (taken !== undefined) await closeRun(taken);
        return runExecutable(resolved, workDir, name, context);
      }
      taken.startedAt = performance.now();
      taken.base = { ...taken.base, startedAt: taken.startedAt };
      let outcome: JudgeReport;
      try {
        outcome = await gradeRun(taken, context);
      } catch (error) {
        outcome = errorReport(taken.base, faultFromError(error));
      }
      return finishRun(taken, outcome);
    },
    usable: () => holds(run),
    dispose: async () => {
      const taken = take();
      if (taken !== undefined) await closeRun(taken);
    },
  };
}

function round(ms: number): number {
  return Math.max(0, Math.round(ms * 10) / 10);
}

async function chownAndMode(file: string, owner: { uid: number; gid: number }, mode: number): Promise<void> {
  await chown(file, owner.uid, owner.gid);
  await chmod(file, mode);
}

/** Limit hits, with the limits as the kernel read them back (not as requested). */
function limitHits(
  resolved: Resolved,
  readBack: { memoryBytes: number; pids: number },
  result: LaunchResult,
  stats: CgroupStats,
): LimitHit[] {
  const hits: LimitHit[] = [];
  const contract = resolved.isolation === 'sandbox' ? 'prevented' : 'detected_and_reaped';
  if (result.timedOut) {
    hits.push({
      scope: 'grader',
      limit: 'wall_time',
      limitValue: resolved.timeoutMs,
      observed: Math.round(result.durationMs),
      enforcement: contract,
      message: `grader ran past its ${resolved.timeoutMs} ms limit and was killed with its process tree`,
    });
  }
  if (result.outputLimit !== null) {
    hits.push({
      scope: 'grader',
      limit: 'output',
      limitValue: resolved.outputBytes,
      observed: result.outputLimit === 'stdout' ? result.stdoutBytes : result.stderrBytes,
      enforcement: 'prevented',
      message: `grader wrote more than ${resolved.outputBytes} bytes to ${result.outputLimit}`,
    });
  }
  if (stats.oomKills > 0) {
    hits.push({
      scope: 'grader',
      limit: 'memory',
      limitValue: readBack.memoryBytes,
      observed: stats.memoryPeakBytes,
      enforcement: 'prevented',
      message: `grader hit its ${readBack.memoryBytes}-byte memory limit (${stats.oomKills} OOM kill(s))`,
    });
  }
  if (stats.pidsLimitHits > 0) {
    hits.push({
      scope: 'grader',
      limit: 'pids',
      limitValue: readBack.pids,
      observed: null,
      enforcement: 'prevented',
      message: `grader hit its ${resolved.pids}-process limit (${stats.pidsLimitHits} refused fork(s))`,
    });
  }
  return hits;
}

async function judgeOutcome(
  base: ReportBase,
  context: JudgeContext,
  resolved: Resolved,
  result: LaunchResult,
  stats: CgroupStats,
  scoreFile: string,
): Promise<JudgeReport> {
  if (result.aborted) return errorReport(base, { code: 'ABORTED', message: 'grading was cancelled' });
  if (!result.started) {
    throw new GraderError(
      'SETUP_FAILED',
      `the grader could not be started: ${escapeForDisplay(result.setupError ?? 'unknown')}`,
    );
  }
  const details = {
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    stderrTail: escapeForDisplay(result.stderrTail, 8 * KiB),
    stdoutTail: escapeForDisplay(result.stdoutTail, 8 * KiB),
  };
  if (result.timedOut) {
    return failedReport(
      base,
      context,
      'TIMEOUT',
      `grader ran past its ${resolved.timeoutMs} ms limit`,
      details,
    );
  }
  if (result.outputLimit !== null) {
    return failedReport(
      base,
      context,
      'OUTPUT_LIMIT',
      `grader flooded ${result.outputLimit} past ${resolved.outputBytes} bytes`,
      details,
    );
  }
  if (stats.oomKills > 0) {
    return failedReport(
      base,
      context,
      'MEMORY_LIMIT',
      `grader hit its ${resolved.memoryBytes}-byte memory limit`,
      details,
    );
  }
  const signal = result.signal;
  if (signal !== null) {
    return failedReport(base, context, 'SIGNAL', `grader was killed by ${signal}`, { ...details, signal });
  }
  if (result.exitCode !== 0) {
    const reason = stats.pidsLimitHits > 0 ? 'PIDS_LIMIT' : 'EXIT_CODE';
    return failedReport(base, context, reason, `grader exited with code ${result.exitCode}`, details);
  }
  const parsed = await readScoreFile(scoreFile, resolved.score);
  if (!parsed.ok) return failedReport(base, context, parsed.reason, parsed.message, details);
  return scoredReport(base, parsed.score, parsed.metadata);
}
