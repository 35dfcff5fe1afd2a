import { readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  escapeForDisplay,
  killPid,
  parseMountInfo,
  parseOptions,
  processesOfUid,
  resolveTrustedBinary,
} from '@karotte/base';
import { listLeaseFiles, reclaimStaleLease } from '@karotte/sandbox/confinement';
import { z } from 'zod';
import { GraderError } from './errors.js';
import { isWithin, runTrusted } from './runner/mounts.js';

const absolute = z.string().refine((p) => path.isAbsolute(p), 'must be an absolute path');

export const recoverGraderLeftoversOptionsSchema = z
  .object({
    /**
     * Base of the private grading directories (the executable judge's `workDir`).
     * @default '/var/lib/karotte/grader'
     */
    workDir: absolute.default('/var/lib/karotte/grader'),
    /**
     * Directory of grader uid lock files (the executable judge's `uidLockDir`), leased as the
     * student sandbox leases its uids (`@karotte/sandbox/confinement`).
     * @default '/run/karotte/grader-uids'
     */
    uidLockDir: absolute.default('/run/karotte/grader-uids'),
    /**
     * Where cgroup filesystems are mounted.
     * @default '/sys/fs/cgroup'
     */
    cgroupRoot: absolute.default('/sys/fs/cgroup'),
  })
  .strict();
export type RecoverGraderLeftoversOptions = z.input<typeof recoverGraderLeftoversOptionsSchema>;

/** What recovery did for one abandoned grader uid. */
export interface RecoveredGrader {
  readonly uid: number;
  /** Processes killed (of the uid, or in its cgroups). */
  readonly killed: number;
  readonly cgroups: readonly string[];
  readonly unmounted: readonly string[];
  readonly removed: readonly string[];
}

/** What {@link recoverGraderLeftovers} did. */
export interface GraderRecoveryReport {
  readonly recovered: readonly RecoveredGrader[];
  /** Lock entries whose holder is alive (left alone). */
  readonly alive: number;
  /** Uids that could not be fully recovered (their lock entry stays for the next try). */
  readonly failed: readonly { readonly uid: number; readonly error: string }[];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Directories named `prefix*` under `root`, at most `depth` levels down, never following links. */
async function findDirs(root: string, prefix: string, depth: number): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, level: number): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const full = path.join(dir, entry.name);
      if (entry.name.startsWith(prefix)) out.push(full);
      else if (level < depth) await walk(full, level + 1);
    }
  };
  await walk(root, 0);
  return out;
}

async function killCgroup(dir: string, killed: Set<number>): Promise<void> {
  const freezer = path.join(dir, 'freezer.state');
  const frozen = await writeFile(freezer, 'FROZEN\n').then(
    () => true,
    () => false,
  );
  try {
    const procs = await readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
    for (const pid of procs.split('\n').filter(Boolean).map(Number)) {
      if (killPid(pid)) killed.add(pid);
    }
  } finally {
    // Thawed whatever happened: a kill that throws must not leave the group frozen.
    if (frozen) await writeFile(freezer, 'THAWED\n').catch(() => undefined);
  }
  await writeFile(path.join(dir, 'cgroup.kill'), '1\n').catch(() => undefined);
}

/**
 * Free what a harness that died mid-grading left: for every grader uid whose lease holder is
 * gone (another boot, a dead pid, a pid reused by another process), kill every process of
 * the uid and of its `karotte-grader-<uid>-*` cgroups, remove those cgroups, unmount its
 * score tmpfs, remove its private `karotte-grade-<uid>-*` directories, then its lease. Only
 * what these names say is touched; a live holder's uid is left alone. Run it at harness start.
 *
 * @throws BadArgumentError on invalid options.
 */
export async function recoverGraderLeftovers(
  options: RecoverGraderLeftoversOptions = {},
): Promise<GraderRecoveryReport> {
  const o = parseOptions(recoverGraderLeftoversOptionsSchema, options, 'recover options');
  const recovered: RecoveredGrader[] = [];
  const failed: { uid: number; error: string }[] = [];
  let alive = 0;
  for (const lease of listLeaseFiles(o.uidLockDir)) {
    if (!lease.stale) {
      alive += 1;
      continue;
    }
    let report: RecoveredGrader | undefined;
    try {
      const taken = await reclaimStaleLease(o.uidLockDir, lease.uid, async (_record, uid) => {
        report = await reclaimGraderUid(uid, o);
      });
      // Not taken: its holder is alive after all (a young unreadable lock), or another
      // recovery took it first.
      if (!taken) alive += 1;
      else if (report !== undefined) recovered.push(report);
    } catch (error) {
      failed.push({
        uid: lease.uid,
        error: escapeForDisplay(error instanceof Error ? error.message : String(error)),
      });
    }
  }
  return { recovered, alive, failed };
}

/** Where a grader run leaves things on the host: its grading directories and cgroups. */
export interface GraderLeftoverPlaces {
  readonly workDir: string;
  readonly cgroupRoot: string;
}

/**
 * Reclaim everything a dead grader run of `uid` left (processes, cgroups, score mount,
 * grading directories). Its lease is the caller's to remove.
 */
export async function reclaimGraderUid(uid: number, o: GraderLeftoverPlaces): Promise<RecoveredGrader> {
  const killed = new Set<number>();
  const cgroups = await findDirs(o.cgroupRoot, `karotte-grader-${uid}-`, 5);
  const deadline = Date.now() + 10_000;
  for (;;) {
    for (const dir of cgroups) await killCgroup(dir, killed);
    for (const { pid } of processesOfUid(uid).alive) if (killPid(pid)) killed.add(pid);
    // A walk that could not read every process proves nothing: it counts as one left.
    const walk = processesOfUid(uid);
    const left = walk.alive.length + (walk.complete ? 0 : 1);
    const members = (
      await Promise.all(
        cgroups.map((dir) => readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '')),
      )
    )
      .join('')
      .trim();
    if (left === 0 && members === '') break;
    if (Date.now() > deadline)
      throw new GraderError('SETUP_FAILED', `processes of grader uid ${uid} survive`);
    await sleep(20);
  }
  for (const dir of cgroups) await rmdir(dir).catch(() => undefined);

  const prefix = path.join(o.workDir, `karotte-grade-${uid}-`);
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8');
  const mounts = parseMountInfo(mountinfo)
    .entries.map((entry) => entry.mountPoint)
    .filter((mountPoint) => mountPoint.startsWith(prefix) && isWithin(mountPoint, o.workDir))
    .reverse();
  const unmounted: string[] = [];
  if (mounts.length > 0) {
    const umount = resolveTrustedBinary('umount');
    for (const mountPoint of mounts) {
      await runTrusted(umount, [mountPoint]).catch(() => runTrusted(umount, ['-l', mountPoint]));
      unmounted.push(mountPoint);
    }
  }
  const removed = (await readdir(o.workDir).catch(() => []))
    .filter((name) => name.startsWith(`karotte-grade-${uid}-`))
    .map((name) => path.join(o.workDir, name));
  for (const dir of removed) await rm(dir, { recursive: true, force: true });
  return { uid, killed: killed.size, cgroups, unmounted, removed };
}
