// The launch prefix: how a process starts INSIDE an episode's group before it runs any
// student code. Node cannot run code between fork and exec, so the prefix is an argv that
// a trusted /bin/sh runs: it writes its own pid to every controller's cgroup.procs (the
// kernel moves it), sets oom_score_adj, then execs the trusted `prlimit` binary, which sets
// the per-process rlimits on itself and execs the rest of argv. All three steps keep the
// same pid, so no child is ever born outside the group. Every variable value is a positional
// argument; the script text is a constant.
import { parseOptions, resolveTrustedBinary } from '@karotte/base';
import { z } from 'zod';
import launchScript from './programs/launch.sh?raw';
import { DEFAULT_MEMLOCK_BYTES, DEFAULT_NOFILE, MAX_NOFILE, limitRules } from './spec.js';

/**
 * The constant script of the launch prefix (programs/launch.sh). Positional arguments:
 * cgroup.procs files, then `--`, then the command to exec. It sets oom_score_adj to
 * STUDENT_OOM_SCORE_ADJ. Exit status 125 when joining a group or setting oom_score_adj failed
 * (nothing of the command ran).
 */
export const LAUNCH_SCRIPT: string = launchScript;

/** The value of `$0` in the launch script (shows in `ps` while it runs). */
const LAUNCH_ARGV0 = 'karotte-launch';

/**
 * Per-process limits (setrlimit, soft = hard) applied by the launch prefix through the
 * trusted `prlimit` binary. Sizes in bytes, times in ms.
 */
export const rlimitsSchema = z
  .object({
    /**
     * RLIMIT_NOFILE, 3 (stdin, stdout, stderr) to 1048576. A student's is at least 16
     * (`studentLimitsSchema`).
     * @default DEFAULT_NOFILE (1024)
     */
    nofile: z.number().int().min(3).max(MAX_NOFILE).default(DEFAULT_NOFILE),
    /** RLIMIT_CORE: no core dumps (a core of a big process is a disk flood). @default 0 */
    coreBytes: z.number().int().nonnegative().default(0),
    /** RLIMIT_FSIZE: largest file a process may write (SIGXFSZ past it). @default unset */
    fsizeBytes: limitRules.fsizeBytes.optional(),
    /** RLIMIT_NPROC (counts per uid across the host). @default unset */
    nproc: z.number().int().positive().optional(),
    /** RLIMIT_STACK. @default unset */
    stackBytes: z.number().int().positive().optional(),
    /** RLIMIT_AS (address space). @default unset */
    addressSpaceBytes: z.number().int().positive().optional(),
    /** RLIMIT_CPU, rounded up to whole seconds. @default unset */
    cpuMs: z.number().int().positive().optional(),
    /**
     * RLIMIT_MEMLOCK: locked memory, and the bound of perf ring buffers (pinned outside a v1
     * memory cgroup). Low by default; the host's is usually 8 MiB.
     * @default DEFAULT_MEMLOCK_BYTES (64 KiB)
     */
    memlockBytes: limitRules.memlockBytes.default(DEFAULT_MEMLOCK_BYTES),
    /** RLIMIT_MSGQUEUE (POSIX message queue bytes). @default unset */
    msgqueueBytes: z.number().int().nonnegative().optional(),
  })
  .strict();

/** Options of {@link rlimitsSchema} as a caller writes them. */
export type RlimitOptions = z.input<typeof rlimitsSchema>;
/** Rlimits after defaults. */
export type Rlimits = z.output<typeof rlimitsSchema>;

/** `prlimit` arguments for `rlimits` (each `--resource=soft:hard`). */
export function prlimitArgs(rlimits: Rlimits): string[] {
  const pair = (value: number): string => `${value}:${value}`;
  const args = [
    `--nofile=${pair(rlimits.nofile)}`,
    `--core=${pair(rlimits.coreBytes)}`,
    `--memlock=${pair(rlimits.memlockBytes)}`,
  ];
  if (rlimits.fsizeBytes !== undefined) args.push(`--fsize=${pair(rlimits.fsizeBytes)}`);
  if (rlimits.nproc !== undefined) args.push(`--nproc=${pair(rlimits.nproc)}`);
  if (rlimits.stackBytes !== undefined) args.push(`--stack=${pair(rlimits.stackBytes)}`);
  if (rlimits.addressSpaceBytes !== undefined) args.push(`--as=${pair(rlimits.addressSpaceBytes)}`);
  if (rlimits.cpuMs !== undefined) args.push(`--cpu=${pair(Math.ceil(rlimits.cpuMs / 1000))}`);
  if (rlimits.msgqueueBytes !== undefined) args.push(`--msgqueue=${pair(rlimits.msgqueueBytes)}`);
  return args;
}

/** Trusted binaries the prefix runs. */
export interface LaunchBinaries {
  readonly sh: string;
  readonly prlimit: string;
}

/** Resolve `sh` and `prlimit` in the trusted directories (throws TrustedBinaryError). */
export function resolveLaunchBinaries(): LaunchBinaries {
  return { sh: resolveTrustedBinary('sh'), prlimit: resolveTrustedBinary('prlimit') };
}

/**
 * Build the prefix: `[sh, -c, LAUNCH_SCRIPT, karotte-launch, ...procsFiles, --, prlimit, ...limits, --]`.
 * Append the command: `[...prefix, '/usr/bin/setpriv', ..., 'bash']`.
 */
export function buildLaunchPrefix(
  binaries: LaunchBinaries,
  procsFiles: readonly string[],
  rlimits: Rlimits,
): string[] {
  return [
    binaries.sh,
    '-c',
    LAUNCH_SCRIPT,
    LAUNCH_ARGV0,
    ...procsFiles,
    '--',
    binaries.prlimit,
    ...prlimitArgs(rlimits),
    '--',
  ];
}

/** Options of {@link createLaunchPrefix}. Strict. */
export const launchPrefixOptionsSchema = z
  .object({
    /** Per-process limits. @default { nofile: 1024, coreBytes: 0, memlockBytes: 65536 } */
    rlimits: rlimitsSchema.prefault({}),
  })
  .strict();

/** Options of {@link createLaunchPrefix} as a caller writes them. */
export type LaunchPrefixOptions = z.input<typeof launchPrefixOptionsSchema>;

/**
 * A launch prefix that joins no cgroup: it sets oom_score_adj 1000 and the rlimits, then
 * execs the rest. For the watchdog tier (hosts without usable cgroups); with a group, use
 * `group.launchPrefix()`.
 */
export function createLaunchPrefix(options: LaunchPrefixOptions = {}): string[] {
  const parsed = parseOptions(launchPrefixOptionsSchema, options, 'launch prefix options');
  return buildLaunchPrefix(resolveLaunchBinaries(), [], parsed.rlimits);
}
