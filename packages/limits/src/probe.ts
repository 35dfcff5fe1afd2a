// probe(): what this host really enforces, limit by limit. It creates a throwaway group and
// quota, writes and reads back, starts one process through the launch prefix and reads its
// own cgroup, oom_score_adj and rlimits from /proc, then removes everything.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { MiB, parseOptions, resolveTrustedBinary } from '@karotte/base';
import { z } from 'zod';
import { cgroupHierarchySchema, detectCgroups, parseProcCgroup } from './cgroup-detect.js';
import { DEFAULT_IMAGE_DIR, DEFAULT_STATE_DIR, STUDENT_OOM_SCORE_ADJ } from './constants.js';
import type { LimitContract, LimitName } from './events.js';
import type { LimitGroup } from './group.js';
import { createGroup } from './group.js';
import { buildLaunchPrefix, resolveLaunchBinaries, rlimitsSchema } from './launch.js';
import { createQuota } from './quota.js';
import { DEFAULT_MEMLOCK_BYTES } from './spec.js';

/** Options of {@link probe}. Strict. */
export const probeOptionsSchema = z
  .object({
    /** Directory of group records. @default DEFAULT_STATE_DIR ('/run/karotte') */
    stateDir: z.string().startsWith('/').default(DEFAULT_STATE_DIR),
    /** Directory of quota images. @default DEFAULT_IMAGE_DIR ('/var/lib/karotte') */
    imageDir: z.string().startsWith('/').default(DEFAULT_IMAGE_DIR),
    /** Where to create the throwaway group. @default detected */
    hierarchy: cgroupHierarchySchema.optional(),
    /** Cancels the probe. */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

/** Options of {@link probe} as a caller writes them. */
export type ProbeOptions = z.input<typeof probeOptionsSchema>;

/** How one limit is enforced on this host. */
export interface ProbedLimit {
  readonly contract: LimitContract;
  /** The mechanism (`cgroup v1 memory.limit_in_bytes`, `watchdog`, `prlimit RLIMIT_NOFILE`, …). */
  readonly mechanism: string;
  /** Why this contract: what was written and read back, or what failed. */
  readonly reason: string;
}

/** What {@link probe} found. JSON-serialisable. */
export interface ProbeResult {
  /** The cgroup backend in use, `watchdog` when only the watchdog tier is available. */
  readonly backend: 'cgroup-v2' | 'cgroup-v1' | 'watchdog';
  readonly root: boolean;
  /** Why a cgroup version was not used. */
  readonly cgroupReasons: readonly string[];
  readonly limits: Readonly<Record<LimitName, ProbedLimit>>;
  /** True when every limit is `prevented`. */
  readonly allPrevented: boolean;
  readonly durationMs: number;
}

const PROBE_MEMORY = 64 * MiB;
const PROBE_PIDS = 64;
const PROBE_NOFILE = 64;
const PROBE_FSIZE = MiB;

/** Can this process watch and kill other uids' processes through /proc? */
function watchdogReason(root: boolean): { usable: boolean; reason: string } {
  try {
    fs.readFileSync('/proc/1/status', 'utf8');
  } catch {
    return { usable: false, reason: 'other processes are hidden in /proc (hidepid)' };
  }
  if (!root) return { usable: false, reason: 'not root: the watchdog could not kill another uid' };
  return { usable: true, reason: '/proc is readable and we can kill' };
}

/**
 * Probe the host. Never throws for a missing defense: each limit reports its contract and
 * the reason; throws only for invalid options.
 */
export async function probe(options: ProbeOptions = {}): Promise<ProbeResult> {
  const parsed = parseOptions(probeOptionsSchema, options, 'probe options');
  const started = Date.now();
  const root = process.geteuid?.() === 0;
  const detection = detectCgroups();
  const limits: Partial<Record<LimitName, ProbedLimit>> = {};
  const notSupported = (reason: string): ProbedLimit => ({
    contract: 'not_supported',
    mechanism: 'none',
    reason,
  });
  let backend: ProbeResult['backend'] = 'watchdog';

  // cgroups: a throwaway group, read back, one process started inside it.
  let group: LimitGroup | null = null;
  let groupError = '';
  try {
    group = await createGroup({
      name: `karotte-probe-${process.pid}-${crypto.randomBytes(4).toString('hex')}`,
      memoryBytes: PROBE_MEMORY,
      pids: PROBE_PIDS,
      stateDir: parsed.stateDir,
      ...(parsed.hierarchy === undefined ? {} : { hierarchy: parsed.hierarchy }),
      ...(parsed.abortSignal === undefined ? {} : { abortSignal: parsed.abortSignal }),
    });
  } catch (error) {
    groupError = error instanceof Error ? error.message : String(error);
  }

  let launchArgv: string[];
  try {
    launchArgv = group
      ? group.launchPrefix({ rlimits: { nofile: PROBE_NOFILE, fsizeBytes: PROBE_FSIZE } })
      : buildLaunchPrefix(
          resolveLaunchBinaries(),
          [],
          parseOptions(rlimitsSchema, { nofile: PROBE_NOFILE, fsizeBytes: PROBE_FSIZE }, 'rlimits'),
        );
  } catch (error) {
    launchArgv = [];
    groupError ||= error instanceof Error ? error.message : String(error);
  }

  // Start `cat` through the prefix: it reports its own cgroup, oom_score_adj and rlimits.
  let selfReport = '';
  let launchError = '';
  if (launchArgv.length > 0) {
    try {
      const cat = resolveTrustedBinary('cat');
      // Loaded here, not at the top: execa is over a hundred modules, and only the probe uses it.
      const { execa } = await import('execa');
      const result = await execa(
        launchArgv[0]!,
        [...launchArgv.slice(1), cat, '/proc/self/cgroup', '/proc/self/oom_score_adj', '/proc/self/limits'],
        { reject: false, stdin: 'ignore', timeout: 10_000, env: { PATH: '/usr/bin:/bin' }, extendEnv: false },
      );
      if (result.exitCode === 0) selfReport = result.stdout;
      else launchError = `launch prefix exited ${String(result.exitCode)}: ${result.stderr.slice(0, 300)}`;
    } catch (error) {
      launchError = error instanceof Error ? error.message : String(error);
    }
  }

  if (group !== null) {
    backend = group.backend;
    const seen = parseProcCgroup(selfReport);
    const controllers = group.backend === 'cgroup-v2' ? [''] : ['memory', 'pids', 'freezer'];
    const joined = controllers.every(
      (controller) => seen.get(controller)?.endsWith(`/${group.name}`) === true,
    );
    if (joined && selfReport !== '') {
      limits.memory = group.contracts.memory;
      limits.pids = group.contracts.pids;
      limits.cpu_weight = group.contracts.cpu_weight;
    } else {
      const reason = `limits read back, but a process started through the launch prefix is not in the group${launchError ? `: ${launchError}` : ''}`;
      limits.memory = notSupported(reason);
      limits.pids = notSupported(reason);
      limits.cpu_weight = notSupported(reason);
    }
    try {
      await group.remove();
    } catch (error) {
      const reason = `the probe group could not be removed: ${error instanceof Error ? error.message : String(error)}`;
      limits.memory = notSupported(reason);
      limits.pids = notSupported(reason);
    }
  } else {
    const watchdog = watchdogReason(root);
    const reason = `cgroups unusable (${groupError || detection.reasons.join('; ')})`;
    const tier: ProbedLimit = watchdog.usable
      ? {
          contract: 'detected_and_reaped',
          mechanism: 'watchdog (polls /proc by uid, RAM-backed files, SysV shm)',
          reason: `${reason}; ${watchdog.reason}`,
        }
      : notSupported(`${reason}; no watchdog: ${watchdog.reason}`);
    limits.memory = tier;
    limits.pids = tier;
    limits.cpu_weight = notSupported(reason);
  }

  // Per-process limits and oom_score_adj, as the launched process saw them.
  const limitLine = (label: string): string[] | null => {
    const line = selfReport.split('\n').find((text) => text.startsWith(label));
    return line === undefined ? null : line.slice(label.length).trim().split(/\s+/);
  };
  const rlimit = (name: LimitName, label: string, expected: number, resource: string): void => {
    const fields = limitLine(label);
    limits[name] =
      fields !== null && fields[0] === String(expected) && fields[1] === String(expected)
        ? {
            contract: 'prevented',
            mechanism: `prlimit ${resource}`,
            reason: `a launched process has ${resource} ${expected}`,
          }
        : notSupported(launchError || `a launched process does not have ${resource} ${expected}`);
  };
  rlimit('nofile', 'Max open files', PROBE_NOFILE, 'RLIMIT_NOFILE');
  rlimit('core', 'Max core file size', 0, 'RLIMIT_CORE');
  rlimit('fsize', 'Max file size', PROBE_FSIZE, 'RLIMIT_FSIZE');
  rlimit('memlock', 'Max locked memory', DEFAULT_MEMLOCK_BYTES, 'RLIMIT_MEMLOCK');
  const adjustment = selfReport.split('\n').find((line) => /^-?\d+$/.test(line.trim()));
  limits.oom_score_adj =
    adjustment?.trim() === String(STUDENT_OOM_SCORE_ADJ)
      ? {
          contract: 'prevented',
          mechanism: '/proc/self/oom_score_adj',
          reason: `a launched process has oom_score_adj ${STUDENT_OOM_SCORE_ADJ}`,
        }
      : notSupported(launchError || 'a launched process did not get oom_score_adj 1000');

  // Disk: a throwaway 16 MiB, 256-inode quota.
  try {
    const quota = await createQuota({
      bytes: 16 * MiB,
      inodes: 256,
      ownerUid: process.geteuid?.() ?? 0,
      imageDir: parsed.imageDir,
      pollMs: 0,
      ...(parsed.abortSignal === undefined ? {} : { abortSignal: parsed.abortSignal }),
    });
    try {
      const ok = quota.limits.bytes > 0 && quota.limits.bytes <= 16 * MiB && quota.limits.inodes >= 256;
      limits.disk_bytes = ok
        ? quota.contracts.disk_bytes
        : notSupported(`statfs reports ${quota.limits.bytes} bytes`);
      limits.disk_inodes = ok
        ? quota.contracts.disk_inodes
        : notSupported(`statfs reports ${quota.limits.inodes} inodes`);
    } finally {
      await quota.remove();
    }
  } catch (error) {
    const reason = `no quota: ${error instanceof Error ? error.message : String(error)}`;
    limits.disk_bytes = notSupported(reason);
    limits.disk_inodes = notSupported(reason);
  }

  const complete = limits as Record<LimitName, ProbedLimit>;
  return {
    backend,
    root,
    cgroupReasons: detection.reasons,
    limits: complete,
    allPrevented: Object.values(complete).every((limit) => limit.contract === 'prevented'),
    durationMs: Date.now() - started,
  };
}
