import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import {
  BadArgumentError,
  bootId,
  isSameProcessAlive,
  killPid,
  parseMountInfo,
  parseOptions,
  processesOfUid,
  readProcessStatus,
  resolveTrustedBinary,
} from '@karotte/base';
import {
  allowListLinkExists,
  defaultSandboxAddress,
  setUpAllowList,
  tearDownAllowList,
  vethNames,
} from './allow-list.js';
import { resolveSandboxBinaries, type SandboxBinaries } from './confinement/binaries.js';
import { buildStudentEnv, type EnvRemoval } from './env.js';
import { SandboxError } from './errors.js';
import { createFileTools, type SandboxFiles } from './file-tools.js';
import {
  allocateLease,
  listLeaseFiles,
  reclaimStaleLease,
  type IdentityLease,
  type LeaseFile,
  type LeaseRecord,
} from './confinement/lease.js';
import { runInside } from './confinement/run.js';
import {
  FORBIDDEN_TARGETS,
  NETWORK_PROBE_SCRIPT,
  dnsServers,
  hostAddresses,
  judgeNetwork,
  parseProbeOutput,
  probeArguments,
  type NetworkTarget,
  type NetworkVerdict,
} from './network.js';
import {
  execOptionsSchema,
  sandboxOptionsSchema,
  type ExecOptions,
  type ParsedSandboxOptions,
  type SandboxOptions,
} from './options.js';
import {
  createLimits,
  reapStudent,
  reclaimIpc,
  recoverLimitLeftovers,
  type ConfirmedReapRecord,
  type EpisodeLimits,
  type KillableGroup,
  type LimitEvent,
} from './seams.js';
import { PersistentShell, type ExecResult } from './shell.js';
import { ensureRootOnlyDir } from './state-dir.js';
import { World } from './confinement/world.js';
import { ALWAYS_COVERED, hostViewHidden, planMounts, type MountPlan } from './confinement/plan.js';

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

/** Crash-recovery record of one sandbox, in `<stateDir>/<id>/manifest.json`. */
const manifestSchema = z
  .object({
    sandboxId: z.string(),
    uid: z.number().int(),
    initPid: z.number().int(),
    initStartTime: z.number().int(),
    /** The boot the init ran in; absent in manifests of earlier versions (read as this boot). */
    initBootId: z.string().min(1).max(64).optional(),
    veth: z.object({ hostEnd: z.string(), peerNetns: z.string().nullable() }).strict().nullable(),
  })
  .strict();
type Manifest = z.infer<typeof manifestSchema>;

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
   * Kill every student process and prove it (before custody). Returns the same record until
   * the sandbox is used again (the next exec rebuilds it, and a later reap reaps that world).
   * destroy() calls it.
   */
  reap(): Promise<ConfirmedReapRecord>;
  /** Remove everything: processes, namespaces, mounts, cgroups, veth, identity. Idempotent (the same report). */
  destroy(): Promise<TeardownReport>;
}

function studentNodeCandidates(explicit: string | undefined): string[] {
  if (explicit !== undefined) return [explicit];
  const out = [process.execPath];
  try {
    out.push(resolveTrustedBinary('node'));
  } catch {
    // none installed system-wide
  }
  return out;
}

/**
 * A Node.js executable the student can run inside the sandbox: not under a covered or
 * replaced directory, every ancestor traversable by others, the file readable and executable
 * by others.
 */
function pickStudentNode(candidates: readonly string[], hidden: readonly string[]): string | undefined {
  for (const candidate of candidates) {
    let real: string;
    try {
      real = realpathSync(candidate);
    } catch {
      continue;
    }
    const blocked = [...hidden, '/tmp', '/dev/shm', '/home'].some(
      (dir) =>
        real === dir ||
        real.startsWith(`${dir.replace(/\/$/, '')}/`) ||
        candidate.startsWith(`${dir.replace(/\/$/, '')}/`),
    );
    if (blocked) continue;
    let ok = true;
    for (let dir = path.dirname(real); ; dir = path.dirname(dir)) {
      if ((statSync(dir).mode & constants.S_IXOTH) === 0) ok = false;
      if (dir === '/') break;
    }
    const mode = statSync(real).mode;
    if ((mode & constants.S_IXOTH) === 0 || (mode & constants.S_IROTH) === 0) ok = false;
    if (ok) return candidate;
  }
  return undefined;
}

function resolvedHidden(paths: readonly string[]): string[] {
  const out = new Set<string>();
  for (const raw of paths) {
    out.add(raw);
    try {
      out.add(realpathSync(raw));
    } catch {
      // missing: covered only if it appears later under its given name (it is skipped then)
    }
  }
  return [...out];
}

/** Reclaim a dead harness's sandbox from its manifest and leases. */
async function reclaimDeadSandbox(
  stateDir: string,
  record: LeaseRecord | undefined,
  uid: number,
): Promise<void> {
  const ip = resolveTrustedBinary('ip');
  let manifest: Manifest | undefined;
  const dir = record === undefined ? undefined : path.join(stateDir, record.sandboxId);
  if (dir !== undefined) {
    try {
      const text = readFileSync(path.join(dir, 'manifest.json'), 'utf8');
      // eslint-disable-next-line no-restricted-syntax -- root-only file this package wrote, validated by the schema
      const parsed = manifestSchema.safeParse(JSON.parse(text));
      if (parsed.success) manifest = parsed.data;
    } catch {
      // no manifest yet: the harness died before the namespaces existed
    }
  }
  if (
    manifest !== undefined &&
    manifest.initPid > 1 &&
    isSameProcessAlive({
      pid: manifest.initPid,
      startTicks: manifest.initStartTime,
      bootId: manifest.initBootId ?? bootId(),
    })
  ) {
    killPid(manifest.initPid);
  }
  await recoverLimitLeftovers();
  const record2 = await reapStudent({ uid, limits: undefined, initPid: undefined, deadlineMs: 30_000 });
  if (!record2.confirmedEmpty) {
    throw new SandboxError('TEARDOWN_INCOMPLETE', `processes of leftover uid ${uid} could not be reaped`);
  }
  if (manifest?.veth) {
    await tearDownAllowList({
      ip,
      hostEnd: manifest.veth.hostEnd,
      peerNetns: manifest.veth.peerNetns ?? undefined,
    });
  }
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}

/** The uid lock files of the sandboxes of `stateDir`. */
function leaseDir(stateDir: string): string {
  return path.join(stateDir, 'uids');
}

/** Every sandbox uid lease in `stateDir`, with whether its harness is gone. */
export function listLeases(stateDir: string): LeaseFile[] {
  return listLeaseFiles(leaseDir(stateDir));
}

/** Reclaim every lease in `stateDir` whose harness died. Returns the uids reclaimed. */
export async function reclaimStaleSandboxes(stateDir: string): Promise<number[]> {
  const out: number[] = [];
  for (const lease of listLeases(stateDir)) {
    if (!lease.stale) continue;
    if (
      await reclaimStaleLease(leaseDir(stateDir), lease.uid, (record, uid) =>
        reclaimDeadSandbox(stateDir, record, uid),
      )
    ) {
      out.push(lease.uid);
    }
  }
  return out;
}

function passwdFiles(
  userName: string,
  uid: number,
  home: string,
  shell: string,
): { passwd: string; group: string } {
  return {
    passwd: [
      'root:x:0:0:root:/root:/usr/sbin/nologin',
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
      `${userName}:x:${uid}:${uid}:karotte student:${home}:${shell}`,
      '',
    ].join('\n'),
    group: ['root:x:0:', 'nogroup:x:65534:', `${userName}:x:${uid}:`, ''].join('\n'),
  };
}

/**
 * Create a sandbox and prove it holds before returning: a fresh uid, its own PID, mount, IPC,
 * UTS and network namespaces, every limit applied before the first student instruction, and
 * a network check from inside as the student.
 *
 * @throws SandboxError `HOST_UNSUPPORTED` (not root, missing binaries or directories),
 *   `NETWORK_NOT_ISOLATED` (the check failed; `detail` holds the verdict), `SETUP_FAILED`,
 *   `NO_FREE_IDENTITY`. Everything made before the failure is removed.
 * @throws BadArgumentError for invalid options, naming the field.
 */
export async function createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const parsed = parseOptions(sandboxOptionsSchema, options, 'sandbox options');
  const missing: string[] = [];
  if (process.geteuid?.() !== 0)
    missing.push('root: creating users, namespaces, cgroups and mounts needs root');
  if (!existsSync('/home') || !statSync('/home').isDirectory())
    missing.push('/home: the student’s home is mounted there');
  let bins: SandboxBinaries | undefined;
  try {
    bins = resolveSandboxBinaries();
  } catch (error) {
    if (SandboxError.isInstance(error) && error.code === 'HOST_UNSUPPORTED') missing.push(...error.missing);
    else throw error;
  }
  const hidden = resolvedHidden([
    ...ALWAYS_COVERED,
    parsed.stateDir,
    ...hostViewHidden(parsed.hostView),
    ...parsed.hiddenPaths,
  ]);
  const node = pickStudentNode(studentNodeCandidates(parsed.studentNode), hidden);
  if (node === undefined) {
    missing.push(
      'a Node.js executable the student can run (outside /tmp, /home and hidden paths, world-executable) for the network check and file tools',
    );
  }
  if (missing.length > 0 || bins === undefined || node === undefined) {
    throw new SandboxError('HOST_UNSUPPORTED', `this host cannot give the sandbox: ${missing.join('; ')}`, {
      missing,
    });
  }
  ensureRootOnlyDir(parsed.stateDir);
  await reclaimStaleSandboxes(parsed.stateDir);
  const sandboxId = `sb-${randomBytes(5).toString('hex')}`;
  const lease = await allocateLease({
    lockDir: leaseDir(parsed.stateDir),
    firstUid: parsed.uidRange.first,
    count: parsed.uidRange.count,
    sandboxId,
    reclaim: (record, uid) => reclaimDeadSandbox(parsed.stateDir, record, uid),
  });
  const sandbox = new SandboxImpl(parsed, bins, node, lease, sandboxId, hidden);
  try {
    await sandbox.build();
  } catch (error) {
    await sandbox.destroy().catch(() => undefined);
    throw error;
  }
  return sandbox;
}

/** Told to the student with the first result after its world was rebuilt. */
const RESTART_NOTICE =
  'The sandbox was restarted before this command: every process of it had been stopped (between steps, by a limit such as memory, or by a restart). Files in the working directory are kept; the shell, the current directory, variables, background jobs, /tmp and /dev/shm are new.';

/** Told to the student when its world was replaced because no shell could start in it. */
const NO_SHELL_NOTICE =
  'The sandbox was restarted before this command: no shell could start in it (its memory was full, for example with files in /tmp or /dev/shm, which count against the memory limit). Files in the working directory are kept; the shell, the current directory, variables, background jobs, /tmp and /dev/shm are new.';

/** The result when not even a fresh world could start a shell (the limits leave no room for one). */
function notStarted(durationMs: number): ExecResult {
  return {
    stdout: '',
    stderr: '',
    exitCode: null,
    timedOut: false,
    aborted: false,
    stdoutTruncated: false,
    stderrTruncated: false,
    stdoutBytes: 0,
    stderrBytes: 0,
    durationMs: Math.round(durationMs),
    restarted: true,
    notice: 'The command did not run: no shell could start in the sandbox, even after restarting it twice.',
  };
}

class SandboxImpl implements Sandbox {
  readonly id: string;
  readonly uid: number;
  readonly gid: number;
  readonly userName: string;
  readonly studentWorkDir: string;
  workDir = '';
  networkCheck!: NetworkVerdict;
  appliedLimits!: AppliedLimits;
  handle!: SandboxHandle;
  cgroupDirs: readonly string[] = [];
  /** The episode's group and quota: private, so only this sandbox removes them. */
  private limits!: EpisodeLimits;
  envRemovals: readonly EnvRemoval[] = [];
  readonly files: SandboxFiles;
  private readonly dir: string;
  /** The current world; a dead one is rebuilt by the next exec, file operation or restart(). */
  private world: World | undefined;
  private shell: PersistentShell | undefined;
  private studentEnv: Record<string, string> = {};
  private limitsMade = false;
  /** Worlds started so far: a reap record stands for one generation only. */
  private generation = 0;
  private reaped: { readonly generation: number; readonly record: ConfirmedReapRecord } | undefined;
  private reaping: Promise<ConfirmedReapRecord> | undefined;
  private rebuilding: Promise<void> | undefined;
  /** exec() and restart() run one at a time, in call order. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Told to the student with the next exec result. */
  private pendingNotice: string | undefined;
  private destroying: Promise<TeardownReport> | undefined;
  private destroyed = false;
  private veth: { hostEnd: string; sandboxEnd: string } | undefined;

  constructor(
    private readonly options: ParsedSandboxOptions,
    private readonly bins: SandboxBinaries,
    private readonly node: string,
    private readonly lease: IdentityLease,
    sandboxId: string,
    private readonly hidden: readonly string[],
  ) {
    this.id = sandboxId;
    this.uid = lease.uid;
    this.gid = lease.gid;
    this.userName = options.userName;
    this.studentWorkDir = `/home/${options.userName}`;
    this.dir = path.join(options.stateDir, sandboxId);
    this.files = createFileTools({
      world: () => this.ensureWorld(),
      uid: this.uid,
      home: this.studentWorkDir,
      node,
      envBinary: bins.env,
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: this.studentWorkDir, LANG: 'C.UTF-8' },
    });
  }

  private get hostname(): string {
    return `karotte-${this.id.slice(3)}`;
  }

  private writeManifest(): void {
    const manifest: Manifest = {
      sandboxId: this.id,
      uid: this.uid,
      initPid: this.world?.initPid ?? 0,
      initStartTime: this.world?.initIdentity?.startTicks ?? 0,
      ...(this.world?.initIdentity === undefined ? {} : { initBootId: this.world.initIdentity.bootId }),
      veth:
        this.veth === undefined
          ? null
          : {
              hostEnd: this.veth.hostEnd,
              peerNetns:
                this.options.network.mode === 'allowList' ? (this.options.network.peerNetns ?? null) : null,
            },
    };
    writeFileSync(path.join(this.dir, 'manifest.json'), JSON.stringify(manifest), { mode: 0o600 });
  }

  async build(): Promise<void> {
    const { options, bins } = this;
    ensureRootOnlyDir(this.dir);
    this.writeManifest();
    this.limits = await createLimits({
      name: `karotte-${this.id}`,
      uid: this.uid,
      limits: options.limits,
      abortSignal: options.abortSignal,
    });
    this.limitsMade = true;
    const quota = this.limits.quota;
    if (quota === null) throw new SandboxError('SETUP_FAILED', 'the limits package gave no disk quota');
    this.workDir = quota.path;
    const group = this.limits.group;
    this.appliedLimits = {
      memoryBytes: group.limits.memoryBytes,
      pids: group.limits.pids,
      cpuWeight: group.limits.cpuWeight,
      diskBytes: quota.limits.bytes,
      diskInodes: quota.limits.inodes,
    };
    this.cgroupDirs = [...group.dirs];
    this.handle = {
      uid: this.uid,
      workDir: this.workDir,
      group: { name: group.name, killAll: () => group.killAll(), pids: () => group.pids() },
    };
    const files = passwdFiles(this.userName, this.uid, this.studentWorkDir, bins.bash);
    writeFileSync(path.join(this.dir, 'passwd'), files.passwd, { mode: 0o644 });
    writeFileSync(path.join(this.dir, 'group'), files.group, { mode: 0o644 });
    writeFileSync(path.join(this.dir, 'empty'), '', { mode: 0o000 });
    // /home inside: a read-only bind of this skeleton (one mount point, the working directory).
    for (const dir of [path.join(this.dir, 'home'), path.join(this.dir, 'home', this.userName)]) {
      mkdirSync(dir, { mode: 0o755 });
      chmodSync(dir, 0o755);
    }
    const built = buildStudentEnv({
      userName: this.userName,
      home: this.studentWorkDir,
      shell: bins.bash,
      hostname: this.hostname,
      passEnv: options.passEnv,
      extra: options.env,
      harnessEnv: process.env,
    });
    this.studentEnv = built.env;
    this.envRemovals = built.removed;
    const world = await this.startWorld(options.abortSignal);
    await this.prepareWorld(world);
  }

  /**
   * The world's mounts: private /tmp and /dev/shm, a read-only skeleton of /home with the
   * working directory (the quota) bound writable in it, the sandbox's own passwd and group,
   * and the covers (the caller's hidden paths, Karotte's state, and the host view, listed
   * again for every world: a top-level directory made on the host since the sandbox was
   * created is covered from the next rebuild on).
   */
  private mountPlan(): MountPlan {
    const { limits } = this.options;
    return planMounts({
      hostname: this.hostname,
      loopback: true,
      tmpfs: [
        { path: '/tmp', sizeBytes: limits.tmpBytes, mode: '1777' },
        { path: '/dev/shm', sizeBytes: limits.shmBytes, mode: '1777' },
      ],
      binds: [
        { source: path.join(this.dir, 'home'), target: '/home', writable: false, noexec: true },
        { source: this.workDir, target: this.studentWorkDir, writable: true },
        { source: path.join(this.dir, 'passwd'), target: '/etc/passwd', writable: false },
        { source: path.join(this.dir, 'group'), target: '/etc/group', writable: false },
      ],
      covers: [...this.hidden, ...hostViewHidden(this.options.hostView)],
      emptyFile: path.join(this.dir, 'empty'),
    });
  }

  /** Start namespaces, mounts and init (a new generation). On failure the caller stops it. */
  private async startWorld(abortSignal?: AbortSignal): Promise<World> {
    const plan = this.mountPlan();
    const world = new World({
      bins: this.bins,
      prefix: this.limits.group.launchPrefix(),
      directives: plan.directives,
      writable: plan.writable,
      setupTimeoutMs: this.options.setupTimeoutMs,
      abortSignal,
    });
    this.world = world;
    this.generation += 1;
    await world.start();
    this.writeManifest();
    return world;
  }

  /**
   * Network (allow-list) and the network check, with the shell starting meanwhile: it only
   * waits for its first command, which cannot come before the check has passed.
   */
  private async prepareWorld(world: World): Promise<void> {
    const network = this.options.network;
    if (network.mode === 'allowList') {
      this.veth = vethNames(this.id);
      this.writeManifest();
      await setUpAllowList({
        ip: this.bins.ip,
        nsenter: this.bins.nsenter,
        initPid: world.initPid,
        hostEnd: this.veth.hostEnd,
        sandboxEnd: this.veth.sandboxEnd,
        sandboxAddress: network.sandboxAddress ?? defaultSandboxAddress(this.id),
        allow: network.allow,
        peerNetns: network.peerNetns,
      });
    }
    this.newShell(world).prestart();
    const verdict = await this.checkNetwork(world);
    this.networkCheck = verdict;
    if (!verdict.ok) {
      throw new SandboxError(
        'NETWORK_NOT_ISOLATED',
        `the network check failed, refusing the episode: ${verdict.failures.join('; ')}`,
        { detail: verdict },
      );
    }
  }

  private async closeShell(): Promise<void> {
    const shell = this.shell;
    this.shell = undefined;
    await shell?.close();
  }

  private newShell(world: World): PersistentShell {
    const previous = this.shell;
    if (previous !== undefined && previous.world !== world) void previous.close();
    const shell = new PersistentShell({
      world,
      uid: this.uid,
      home: this.studentWorkDir,
      env: this.studentEnv,
      bash: this.bins.bash,
      envBinary: this.bins.env,
      cat: this.bins.cat,
      headBytes: this.options.output.headBytes,
      tailBytes: this.options.output.tailBytes,
      killGraceMs: 2000,
    });
    this.shell = shell;
    return shell;
  }

  /**
   * The live world. When its init has died (a reap between steps, the OOM killer, a kill from
   * outside) it is rebuilt first, once for all concurrent callers. Throws DESTROYED only after
   * destroy(); a rebuild that fails is a host fault (SETUP_FAILED, NETWORK_NOT_ISOLATED).
   */
  private async ensureWorld(): Promise<World> {
    for (let rebuilds = 0; ;) {
      if (this.destroyed) throw destroyedError();
      if (this.reaping !== undefined) {
        await this.reaping.catch(() => undefined);
        continue;
      }
      if (this.rebuilding !== undefined) {
        await this.rebuilding;
        continue;
      }
      const world = this.world;
      if (world?.alive() === true) return world;
      if (rebuilds >= 3) {
        throw new SandboxError('SETUP_FAILED', 'the sandbox init died right after each of 3 restarts');
      }
      rebuilds += 1;
      await this.startRebuild();
    }
  }

  private startRebuild(notice: string = RESTART_NOTICE): Promise<void> {
    const rebuilding = this.rebuildWorld(notice).finally(() => {
      if (this.rebuilding === rebuilding) this.rebuilding = undefined;
    });
    this.rebuilding = rebuilding;
    return rebuilding;
  }

  /**
   * Replace the world: stop the old one (killing its init kills every process of its PID
   * namespace), wait for the uid to be empty, then build new namespaces for the same uid,
   * working directory and limits group, and check the network again.
   */
  private async rebuildWorld(notice: string): Promise<void> {
    // Killing PID 1 kills the shell with everything else; closing it at the same time only
    // releases its pipes sooner.
    await Promise.all([this.closeShell(), this.world?.stop()]);
    await this.waitForNoStudentProcess(5000);
    if (this.veth !== undefined) {
      const peerNetns =
        this.options.network.mode === 'allowList' ? this.options.network.peerNetns : undefined;
      await tearDownAllowList({ ip: this.bins.ip, hostEnd: this.veth.hostEnd, peerNetns });
    }
    if (this.destroyed) throw destroyedError();
    let world: World | undefined;
    try {
      world = await this.startWorld();
      await this.prepareWorld(world);
    } catch (error) {
      await this.closeShell();
      await (world ?? this.world)?.stop();
      throw error;
    }
    this.pendingNotice = notice;
  }

  /**
   * After the init died, the kernel kills its PID namespace; wait (bounded) until no process
   * of the uid is left, killing any still there (each re-checked just before its kill).
   */
  private async waitForNoStudentProcess(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const left = processesOfUid(this.uid).alive;
      if (left.length === 0 || performance.now() > deadline) return;
      for (const { pid } of left) {
        // Read again right before the kill: a pid that exited during the walk and was reused
        // by another process (of another uid) is not the student's to kill.
        if (readProcessStatus(pid)?.uids.includes(this.uid) === true) killPid(pid);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  private async checkNetwork(world: World): Promise<NetworkVerdict> {
    const started = performance.now();
    const mode = this.options.network.mode;
    const allowed =
      mode === 'allowList' ? this.options.network.allow.map((endpoint) => endpoint.address) : [];
    const targets: NetworkTarget[] = [...FORBIDDEN_TARGETS, ...hostAddresses(), ...dnsServers()].filter(
      (target) => !allowed.includes(target.address),
    );
    for (const address of allowed)
      targets.push({ label: 'allowed', address, family: 4, expected: 'reachable' });
    const output = await runInside({
      world,
      uid: this.uid,
      program: [
        this.bins.env,
        '-i',
        '-C',
        '/',
        'PATH=/usr/bin:/bin',
        'LC_ALL=C',
        this.bins.bash,
        '--noprofile',
        '--norc',
        '-c',
        NETWORK_PROBE_SCRIPT,
        'karotte-netcheck',
        ...probeArguments(targets),
      ],
      stdin: '',
      timeoutMs: 60_000,
      maxStdoutBytes: 256 * 1024,
    });
    const findings = parseProbeOutput(output.stdout.toString('utf8'), targets);
    if (findings === undefined) {
      throw new SandboxError(
        'SETUP_FAILED',
        `the network check did not finish: ${output.stderr.slice(0, 1000) || `exit ${String(output.exitCode ?? output.signal)}${output.timedOut ? ' (timed out)' : ''}`}`,
      );
    }
    return judgeNetwork(mode, findings, Math.round(performance.now() - started));
  }

  limitEvents(): Promise<LimitEvent[]> {
    if (!this.limitsMade) return Promise.resolve([]);
    return this.limits.events();
  }

  exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (typeof command !== 'string')
      throw new BadArgumentError('command must be a string', { field: 'command' });
    if (command.includes('\0'))
      throw new BadArgumentError('command must not contain NUL bytes', { field: 'command' });
    const parsed = parseOptions(execOptionsSchema, options, 'exec options');
    if (this.destroyed) throw destroyedError();
    return this.serialize(() =>
      this.execNow(command, parsed.timeoutMs ?? this.options.commandTimeoutMs, parsed.abortSignal),
    );
  }

  private serialize<T>(task: () => Promise<T>): Promise<T> {
    const result = this.queue.then(task);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async execNow(
    command: string,
    timeoutMs: number,
    abortSignal: AbortSignal | undefined,
  ): Promise<ExecResult> {
    const started = performance.now();
    // "Not run" means no shell read the command, so trying again cannot run it twice.
    let lost = 0;
    let killedAtStart = 0;
    for (;;) {
      const world = await this.ensureWorld();
      const shell = this.shell?.world === world ? this.shell : this.newShell(world);
      const outcome = await shell.run(command, { timeoutMs, abortSignal });
      if (!('notRun' in outcome)) return this.withNotice(outcome);
      if (outcome.notRun === 'killed-at-start') {
        // The world lives but a new shell is killed before it can read anything: its memory is
        // full (files in /tmp and /dev/shm count, and killing processes does not free them)
        // or something in it kills every new process. A new world ends both; files are kept.
        if (killedAtStart >= 2) return this.withNotice(notStarted(performance.now() - started));
        killedAtStart += 1;
        await this.forceRebuild(NO_SHELL_NOTICE);
        continue;
      }
      // The world died (or was reaped) before the command reached a shell: it is rebuilt above.
      lost += 1;
      if (lost > 3) {
        throw new SandboxError(
          'SETUP_FAILED',
          'the sandbox init died before the command reached a shell, 4 times',
        );
      }
    }
  }

  /** Rebuild now even if the init lives (restart(), or a world no shell can start in). */
  private async forceRebuild(notice: string): Promise<void> {
    for (;;) {
      if (this.destroyed) throw destroyedError();
      if (this.reaping !== undefined) await this.reaping.catch(() => undefined);
      else if (this.rebuilding !== undefined) await this.rebuilding.catch(() => undefined);
      else break;
    }
    await this.startRebuild(notice);
  }

  private withNotice(result: ExecResult): ExecResult {
    const notice = this.pendingNotice;
    if (notice === undefined) return result;
    this.pendingNotice = undefined;
    return {
      ...result,
      restarted: true,
      notice: result.notice === undefined ? notice : `${notice} ${result.notice}`,
    };
  }

  restart(): Promise<RestartReport> {
    if (this.destroyed) throw destroyedError();
    return this.serialize(async () => {
      const started = performance.now();
      await this.forceRebuild(RESTART_NOTICE);
      return { networkCheck: this.networkCheck, durationMs: Math.round(performance.now() - started) };
    });
  }

  reap(): Promise<ConfirmedReapRecord> {
    if (this.reaped !== undefined && this.reaped.generation === this.generation) {
      return Promise.resolve(this.reaped.record);
    }
    if (this.reaping === undefined) {
      const reaping = this.reapNow().finally(() => {
        if (this.reaping === reaping) this.reaping = undefined;
      });
      this.reaping = reaping;
    }
    return this.reaping;
  }

  private async reapNow(): Promise<ConfirmedReapRecord> {
    // A rebuild in flight finishes first; its world is then reaped like any other.
    await this.rebuilding?.catch(() => undefined);
    const generation = this.generation;
    // Killing PID 1 first makes the kernel kill the whole PID namespace at once (the shell
    // with it); the reaper then proves, by cgroup, uid (in-cohort kill) and /proc sweep, that
    // nothing survived.
    await Promise.all([this.closeShell(), this.world?.stop()]);
    const record = await reapStudent({
      uid: this.uid,
      limits: this.limitsMade ? this.limits : undefined,
      initPid: undefined,
      deadlineMs: this.options.reapDeadlineMs,
    });
    this.reaped = { generation, record };
    return record;
  }

  destroy(): Promise<TeardownReport> {
    this.destroyed = true;
    this.destroying ??= this.teardown();
    return this.destroying;
  }

  private async teardown(): Promise<TeardownReport> {
    const started = performance.now();
    const leftovers: string[] = [];
    await this.rebuilding?.catch(() => undefined);
    let reapRecord: ConfirmedReapRecord | undefined;
    try {
      reapRecord = await this.reap();
      if (!reapRecord.confirmedEmpty)
        leftovers.push(`student processes of uid ${this.uid} survived the reap`);
    } catch (error) {
      leftovers.push(`reaping failed: ${error instanceof Error ? error.message : String(error)}`);
      await this.world?.stop();
    }
    if (this.world?.initIdentity !== undefined && isSameProcessAlive(this.world.initIdentity)) {
      leftovers.push(`the namespace init ${this.world.initPid} is still alive`);
    }
    // Independent of each other once every process is gone: IPC objects, group and quota, veth.
    const peerNetns = this.options.network.mode === 'allowList' ? this.options.network.peerNetns : undefined;
    const veth = this.veth;
    const [ipc, removal, vethLeft] = await Promise.allSettled([
      reclaimIpc(this.uid),
      this.limitsMade ? this.limits.remove() : Promise.resolve({ events: [] as LimitEvent[] }),
      veth === undefined
        ? Promise.resolve(false)
        : tearDownAllowList({ ip: this.bins.ip, hostEnd: veth.hostEnd, peerNetns }).then(() =>
            allowListLinkExists({ ip: this.bins.ip, hostEnd: veth.hostEnd, peerNetns }),
          ),
    ]);
    if (ipc.status === 'rejected') leftovers.push(`IPC reclaim failed: ${errorText(ipc.reason)}`);
    let limitEvents: readonly LimitEvent[] = [];
    if (removal.status === 'fulfilled') limitEvents = removal.value.events;
    else leftovers.push(`removing the group and quota failed: ${errorText(removal.reason)}`);
    if (vethLeft.status === 'rejected') leftovers.push(`removing veth failed: ${errorText(vethLeft.reason)}`);
    else if (vethLeft.value && veth !== undefined) leftovers.push(`veth ${veth.hostEnd} still exists`);
    const walk = processesOfUid(this.uid);
    if (walk.alive.length > 0) leftovers.push(`processes of uid ${this.uid} are alive`);
    else if (!walk.complete)
      leftovers.push(
        `the processes of uid ${this.uid} could not be listed: ${walk.problem ?? 'incomplete walk'}`,
      );
    // Any mount at or below the working directory is left over (its mount point decoded, so a
    // path with a space is seen too); the sandbox's own mounts live in its namespace.
    const workDir = this.workDir;
    const stillMounted =
      workDir !== '' &&
      parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8')).entries.some(
        (mount) => mount.mountPoint === workDir || mount.mountPoint.startsWith(`${workDir}/`),
      );
    if (stillMounted) leftovers.push(`${workDir} is still mounted`);
    if (leftovers.length === 0) {
      rmSync(this.dir, { recursive: true, force: true });
      this.lease.release();
    }
    const report: TeardownReport = {
      reap: reapRecord,
      limitEvents,
      leftovers,
      durationMs: Math.round(performance.now() - started),
    };
    if (leftovers.length > 0) {
      // The uid stays leased (its lock names us); once we are gone the next start reclaims it.
      throw new SandboxError('TEARDOWN_INCOMPLETE', `teardown left: ${leftovers.join('; ')}`, {
        leftovers,
        detail: report,
      });
    }
    return report;
  }
}

function destroyedError(): SandboxError {
  return new SandboxError('DESTROYED', 'the sandbox was destroyed: using it after destroy() is a caller bug');
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
