import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isErrno, toSystemError } from '@karotte/base';
import { GraderError } from '../errors.js';

/**
 * The grader's own cgroup: a memory limit, a process limit, and an atomic kill of everything
 * in it. This is an internal seam: it implements just what a grader run needs, on cgroup v1
 * (memory + pids + freezer, as on this project's hosts) and on cgroup v2 (memory, pids,
 * `cgroup.kill`).
 */
export interface GraderCgroup {
  readonly version: 1 | 2;
  /** The `cgroup.procs` files a process writes `0` into to join every controller. */
  readonly procsFiles: readonly string[];
  /** The memory limit as read back from the kernel, in bytes. */
  readonly memoryLimitBytes: number;
  /** The process limit as read back from the kernel. */
  readonly pidsLimit: number;
  /** Kill every process in the group, atomically with respect to fork. */
  killAll(): Promise<void>;
  /** Pids in the group (union over controllers). */
  pids(): Promise<number[]>;
  /** Limit statistics, read after the run. */
  stats(): Promise<CgroupStats>;
  /** Kill, wait until empty (bounded) and remove the group. False when processes survived. */
  destroy(timeoutMs?: number): Promise<boolean>;
}

export interface CgroupStats {
  /** Peak memory usage in bytes, when the kernel reports it. */
  readonly memoryPeakBytes: number | null;
  /** Times the kernel's OOM killer fired in the group. */
  readonly oomKills: number;
  /** Times a fork failed on the process limit. */
  readonly pidsLimitHits: number;
}

export interface CreateCgroupOptions {
  readonly memoryBytes: number;
  readonly pids: number;
  /** Goes into the group's name (`karotte-grader-<label>-<random>`), e.g. the grader's uid. */
  readonly label?: string;
  /** Where cgroup filesystems are mounted. Tests point it at a fake tree. */
  readonly cgroupRoot?: string;
  /** The `/proc/<pid>/cgroup` file naming our own cgroups. */
  readonly selfCgroupFile?: string;
}

const V1_CONTROLLERS = ['memory', 'pids', 'freezer'] as const;

/** Parse `/proc/self/cgroup` into controller → path (v2 under the key `''`). */
export function parseProcCgroup(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (match === null) continue;
    const controllers = match[1]!;
    const where = match[2]!;
    if (controllers === '') out.set('', where);
    for (const controller of controllers.split(',')) if (controller !== '') out.set(controller, where);
  }
  return out;
}

async function exists(file: string): Promise<boolean> {
  try {
    await readFile(file);
    return true;
  } catch {
    return false;
  }
}

async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw toSystemError(error, `read ${file}`);
  }
}

async function writeText(file: string, value: string): Promise<void> {
  try {
    await writeFile(file, value);
  } catch (error) {
    throw toSystemError(error, `write ${value.trim()} to ${file}`);
  }
}

async function readNumber(file: string): Promise<number | null> {
  try {
    const text = (await readFile(file, 'utf8')).trim();
    if (text === 'max') return Number.POSITIVE_INFINITY;
    const value = Number(text);
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

/** A `key value` line out of a flat-keyed cgroup file (`memory.events`, `pids.events`). */
async function readKeyed(file: string, key: string): Promise<number> {
  try {
    const text = await readFile(file, 'utf8');
    const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
    return match === null ? 0 : Number(match[1]);
  } catch {
    return 0;
  }
}

async function readPids(procsFile: string): Promise<number[]> {
  try {
    const text = await readFile(procsFile, 'utf8');
    return text
      .split('\n')
      .filter((line) => line !== '')
      .map(Number);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw toSystemError(error, `read ${procsFile}`);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Create a fresh cgroup named `karotte-grader-<random>` under this process's own cgroup in
 * every needed controller, write the limits and read them back.
 *
 * @throws GraderError `CONFINEMENT_UNAVAILABLE` when neither a cgroup v1 memory+pids+freezer
 *   hierarchy nor a cgroup v2 hierarchy with memory and pids is available.
 */
export async function createGraderCgroup(options: CreateCgroupOptions): Promise<GraderCgroup> {
  const root = options.cgroupRoot ?? '/sys/fs/cgroup';
  const self = parseProcCgroup(await readText(options.selfCgroupFile ?? '/proc/self/cgroup'));
  const label = options.label === undefined ? '' : `${options.label.replace(/[^A-Za-z0-9_]/g, '_')}-`;
  const name = `karotte-grader-${label}${randomBytes(6).toString('hex')}`;

  const v1 = V1_CONTROLLERS.every((c) => self.has(c));
  if (v1 && (await exists(path.join(root, 'memory', self.get('memory')!, 'cgroup.procs')))) {
    return createV1(root, self, name, options);
  }
  const unified = self.get('');
  if (unified !== undefined) {
    const controllers = await readFile(path.join(root, unified, 'cgroup.controllers'), 'utf8').catch(
      () => '',
    );
    const have = new Set(controllers.trim().split(/\s+/));
    if (have.has('memory') && have.has('pids')) return createV2(path.join(root, unified), name, options);
  }
  throw new GraderError(
    'CONFINEMENT_UNAVAILABLE',
    'no cgroup hierarchy with memory and pids controllers: cannot limit or kill the grader',
  );
}

async function createV1(
  root: string,
  self: Map<string, string>,
  name: string,
  options: CreateCgroupOptions,
): Promise<GraderCgroup> {
  const dirs = Object.fromEntries(
    V1_CONTROLLERS.map((c) => [c, path.join(root, c, self.get(c)!, name)]),
  ) as Record<(typeof V1_CONTROLLERS)[number], string>;
  const created: string[] = [];
  try {
    for (const dir of Object.values(dirs)) {
      await mkdir(dir);
      created.push(dir);
    }
    // memsw must stay >= the memory limit, so memory first; a host without swap accounting
    // has no memsw file, and without swap there is nothing to page out to.
    await writeText(path.join(dirs.memory, 'memory.limit_in_bytes'), `${options.memoryBytes}\n`);
    if (await exists(path.join(dirs.memory, 'memory.memsw.limit_in_bytes'))) {
      await writeText(path.join(dirs.memory, 'memory.memsw.limit_in_bytes'), `${options.memoryBytes}\n`);
    }
    await writeText(path.join(dirs.pids, 'pids.max'), `${options.pids}\n`);
    const memoryLimitBytes = await readNumber(path.join(dirs.memory, 'memory.limit_in_bytes'));
    const pidsLimit = await readNumber(path.join(dirs.pids, 'pids.max'));
    // Read back: the kernel rounds the memory limit down to a page; anything else is a refusal.
    if (
      memoryLimitBytes === null ||
      memoryLimitBytes > options.memoryBytes ||
      memoryLimitBytes < options.memoryBytes - 65536
    ) {
      throw new GraderError(
        'CONFINEMENT_UNAVAILABLE',
        `memory limit did not take (read back ${memoryLimitBytes})`,
      );
    }
    if (pidsLimit !== options.pids) {
      throw new GraderError('CONFINEMENT_UNAVAILABLE', `pids limit did not take (read back ${pidsLimit})`);
    }
    const procsFiles = Object.values(dirs).map((dir) => path.join(dir, 'cgroup.procs'));
    const pids = async (): Promise<number[]> => {
      const all = new Set<number>();
      for (const file of procsFiles) for (const pid of await readPids(file)) all.add(pid);
      return [...all];
    };
    const killAll = async (): Promise<void> => {
      // Freeze first so nothing can fork between reading the member list and the kill;
      // SIGKILL every frozen member, then thaw so the kernel delivers the signals.
      const state = path.join(dirs.freezer, 'freezer.state');
      await writeText(state, 'FROZEN\n');
      const deadline = Date.now() + 2000;
      while ((await readText(state)).trim() !== 'FROZEN' && Date.now() < deadline) await sleep(2);
      for (const pid of await pids()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await writeText(state, 'THAWED\n');
    };
    const group: GraderCgroup = {
      version: 1,
      procsFiles,
      memoryLimitBytes,
      pidsLimit,
      killAll,
      pids,
      stats: async () => ({
        memoryPeakBytes: await readNumber(path.join(dirs.memory, 'memory.max_usage_in_bytes')),
        oomKills: await readKeyed(path.join(dirs.memory, 'memory.oom_control'), 'oom_kill'),
        pidsLimitHits: await readKeyed(path.join(dirs.pids, 'pids.events'), 'max'),
      }),
      destroy: (timeoutMs = 5000) => destroyGroup(group, Object.values(dirs), timeoutMs),
    };
    return group;
  } catch (error) {
    for (const dir of created.reverse()) await rmdir(dir).catch(() => undefined);
    if (error instanceof GraderError) throw error;
    throw new GraderError('CONFINEMENT_UNAVAILABLE', `cannot create the grader's cgroup: ${String(error)}`, {
      cause: error,
    });
  }
}

async function createV2(parent: string, name: string, options: CreateCgroupOptions): Promise<GraderCgroup> {
  const dir = path.join(parent, name);
  try {
    await mkdir(dir);
  } catch (error) {
    throw new GraderError('CONFINEMENT_UNAVAILABLE', `cannot create ${dir}: ${String(error)}`, {
      cause: error,
    });
  }
  try {
    // Order: no swap first (else the group pages out instead of hitting the limit), then
    // the limit, and oom.group so the OOM killer takes the whole grader, not one process.
    if (await exists(path.join(dir, 'memory.swap.max')))
      await writeText(path.join(dir, 'memory.swap.max'), '0\n');
    await writeText(path.join(dir, 'memory.max'), `${options.memoryBytes}\n`);
    await writeText(path.join(dir, 'memory.oom.group'), '1\n');
    await writeText(path.join(dir, 'pids.max'), `${options.pids}\n`);
    const memoryLimitBytes = await readNumber(path.join(dir, 'memory.max'));
    const pidsLimit = await readNumber(path.join(dir, 'pids.max'));
    if (
      memoryLimitBytes === null ||
      memoryLimitBytes > options.memoryBytes ||
      memoryLimitBytes < options.memoryBytes - 65536
    ) {
      throw new GraderError(
        'CONFINEMENT_UNAVAILABLE',
        `memory limit did not take (read back ${memoryLimitBytes})`,
      );
    }
    if (pidsLimit !== options.pids) {
      throw new GraderError('CONFINEMENT_UNAVAILABLE', `pids limit did not take (read back ${pidsLimit})`);
    }
    const procsFile = path.join(dir, 'cgroup.procs');
    const group: GraderCgroup = {
      version: 2,
      procsFiles: [procsFile],
      memoryLimitBytes,
      pidsLimit,
      // cgroup.kill is atomic with respect to fork by design.
      killAll: () => writeText(path.join(dir, 'cgroup.kill'), '1\n'),
      pids: () => readPids(procsFile),
      stats: async () => ({
        memoryPeakBytes: await readNumber(path.join(dir, 'memory.peak')),
        oomKills: await readKeyed(path.join(dir, 'memory.events'), 'oom_kill'),
        pidsLimitHits: await readKeyed(path.join(dir, 'pids.events'), 'max'),
      }),
      destroy: (timeoutMs = 5000) => destroyGroup(group, [dir], timeoutMs),
    };
    return group;
  } catch (error) {
    await rmdir(dir).catch(() => undefined);
    if (error instanceof GraderError) throw error;
    throw new GraderError('CONFINEMENT_UNAVAILABLE', `cannot configure ${dir}: ${String(error)}`, {
      cause: error,
    });
  }
}

async function destroyGroup(
  group: GraderCgroup,
  dirs: readonly string[],
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await group.pids()).length === 0) break;
    if (Date.now() > deadline) return false;
    await group.killAll();
    await sleep(5);
  }
  for (const dir of dirs) {
    // rmdir can briefly fail with EBUSY while the kernel finishes tearing down the last task.
    for (;;) {
      try {
        await rmdir(dir);
        break;
      } catch (error) {
        if (isErrno(error, 'ENOENT')) break;
        if (!isErrno(error, 'EBUSY') || Date.now() > deadline) throw toSystemError(error, `rmdir ${dir}`);
        await sleep(5);
      }
    }
  }
  return true;
}
