import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import {
  BadArgumentError,
  isSameProcessAlive,
  killPid,
  parseMountInfo,
  parseOptions,
  processesOfUid,
  readProcessStatus,
} from '@karotte/base';
import {
  allowListLinkExists,
  defaultSandboxAddress,
  setUpAllowList,
  tearDownAllowList,
  vethNames,
} from './allow-list.js';
import { resolveSandboxBinaries, type SandboxBinaries } from './confinement/binaries.js';
import { IMAGE_MOUNT_POINTS } from './image/cache.js';
import { isExecutableInRoot } from './image/unpack.js';
import { buildStudentEnv, type EnvRemoval } from './env.js';
import { SandboxError } from './errors.js';
import { createFileTools, type SandboxFiles } from './file-tools.js';
import { allocateLease, type IdentityLease } from './confinement/lease.js';
import { type NetworkVerdict } from './network.js';
import {
  execOptionsSchema,
  sandboxOptionsSchema,
  type ExecOptions,
  type ParsedSandboxOptions,
  type SandboxOptions,
} from './options.js';
import {
  admitEpisode,
  createLimits,
  defaultMemoryBytes,
  reapStudent,
  reclaimIpc,
  type Admission,
  type ConfirmedReapRecord,
  type EpisodeLimits,
  type LimitEvent,
} from './seams.js';
import { PersistentShell, type ExecResult } from './shell.js';
import { ensureRootOnlyDir } from './state-dir.js';
import { World } from './confinement/world.js';
import { buildSyscallFilter } from './confinement/syscall-filter.js';
import { checkWorldNetwork } from './network-check.js';
import { NO_SHELL_NOTICE, RESTART_NOTICE, notStarted } from './notices.js';
import { passwdFiles } from './passwd.js';
import {
  leaseDir,
  listLeases,
  reclaimDeadSandbox,
  reclaimStaleSandboxes,
  type Manifest,
} from './recovery.js';
import { pickStudentNode, resolvedHidden, studentNodeCandidates } from './student-node.js';
import type { AppliedLimits, RestartReport, Sandbox, SandboxHandle, TeardownReport } from './types.js';

export { listLeases, reclaimStaleSandboxes };
export type { AppliedLimits, RestartReport, Sandbox, SandboxHandle, TeardownReport };
import {
  ALWAYS_COVERED,
  IMAGE_ROOT,
  hostViewHidden,
  imageBinds,
  planMounts,
  type BindMount,
  type MountPlan,
} from './confinement/plan.js';

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
  if (process.arch !== 'x64')
    missing.push(`x86-64: the syscall filter is assembled for x86-64 only (this host is ${process.arch})`);
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
  if (parsed.rootfs !== undefined) {
    const problem = imageProblem(parsed.rootfs, bins);
    if (problem !== undefined) throw new BadArgumentError(`rootfs: ${problem}`, { field: 'rootfs' });
    mkdirSync(IMAGE_ROOT, { recursive: true, mode: 0o755 });
  }
  ensureRootOnlyDir(parsed.stateDir);
  await reclaimStaleSandboxes(parsed.stateDir);
  const sandboxId = `sb-${randomBytes(5).toString('hex')}`;
  // A task without a memory limit gets a share of the host, never the whole host; then the
  // episode waits (bounded) until its memory and worst-case open files fit beside the running
  // ones, before anything of it exists.
  const limits = { ...parsed.limits, memoryBytes: parsed.limits.memoryBytes ?? defaultMemoryBytes() };
  const admission = await admitEpisode({
    label: sandboxId,
    memoryBytes: limits.memoryBytes,
    files: limits.pids * limits.nofile,
    waitMs: parsed.admissionWaitMs,
    abortSignal: parsed.abortSignal,
  });
  let lease: IdentityLease;
  try {
    lease = await allocateLease({
      lockDir: leaseDir(parsed.stateDir),
      firstUid: parsed.uidRange.first,
      count: parsed.uidRange.count,
      sandboxId,
      reclaim: (record, uid) => reclaimDeadSandbox(parsed.stateDir, record, uid),
    });
  } catch (error) {
    admission.release();
    throw error;
  }
  const sandbox = new SandboxImpl({ ...parsed, limits }, bins, node, lease, sandboxId, hidden, admission);
  try {
    await sandbox.build();
  } catch (error) {
    await sandbox.destroy().catch(() => undefined);
    throw error;
  }
  return sandbox;
}

/**
 * Why an image's tree cannot be the student's root, or undefined: it must be root's and
 * closed to others (an unpacked image of the cache), hold the mount points, and have the
 * shell, env and cat the sandbox runs as the student at the host's paths (resolved inside
 * the tree, symlinks as the chroot will see them).
 */
function imageProblem(rootfs: string, bins: SandboxBinaries): string | undefined {
  const stat = statSync(rootfs, { throwIfNoEntry: false });
  if (stat?.isDirectory() !== true) return `${rootfs} is not a directory`;
  if (stat.uid !== 0 || (stat.mode & 0o022) !== 0)
    return `${rootfs} must be root's and writable by no one else`;
  for (const point of IMAGE_MOUNT_POINTS) {
    const at = lstatSync(path.join(rootfs, point.path), { throwIfNoEntry: false });
    if (at === undefined || (point.kind === 'dir' ? !at.isDirectory() : !at.isFile())) {
      return `${rootfs} has no ${point.kind === 'dir' ? 'directory' : 'file'} /${point.path} to mount over (import it with importImage)`;
    }
  }
  for (const binary of [bins.bash, bins.env, bins.cat]) {
    if (!isExecutableInRoot(rootfs, binary))
      return `the image has no ${binary} (the student's shell needs it)`;
  }
  return undefined;
}

/** Where the host's Node.js and its libraries are bound in an image (mount points of every import). */
const HOST_LIB = '/karotte/host-lib';
const HOST_NODE = '/karotte/host-node';

/**
 * The host's dynamic loader (x86-64) and the directory of the libraries Node.js links: on
 * Debian and Ubuntu (merged /usr) both are in /usr/lib/x86_64-linux-gnu.
 */
function hostNodeLoader(): { readonly loader: string; readonly libDir: string } {
  const loader = realpathSync('/lib64/ld-linux-x86-64.so.2');
  return { loader, libDir: path.dirname(loader) };
}

/** Ptys of one sandbox's private devpts instance (the host's ptys are never the student's). */
const STUDENT_MAX_PTYS = 32;

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
  /** The student's syscall filter, assembled once. */
  private readonly syscallFilter: Buffer;
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
  /** Set at the first exec, file tool use, restart or reap: the sandbox has had its student. */
  private used = false;
  /** What the sandbox looked like when it was ready, for {@link readinessProblems}. */
  private ready:
    { readonly world: World; readonly netDevices: string; readonly workDirDev: number } | undefined;
  private veth: { hostEnd: string; sandboxEnd: string } | undefined;

  constructor(
    private readonly options: ParsedSandboxOptions,
    private readonly bins: SandboxBinaries,
    private readonly node: string,
    private readonly lease: IdentityLease,
    sandboxId: string,
    private readonly hidden: readonly string[],
    private readonly admission: Admission,
  ) {
    this.id = sandboxId;
    this.uid = lease.uid;
    this.gid = lease.gid;
    this.userName = options.userName;
    this.studentWorkDir = `/home/${options.userName}`;
    this.dir = path.join(options.stateDir, sandboxId);
    this.syscallFilter = buildSyscallFilter({
      allow: options.syscallFilter.allow.map((entry) => entry.name),
    });
    this.files = createFileTools({
      world: () => {
        this.used = true;
        return this.ensureWorld();
      },
      uid: this.uid,
      home: this.studentWorkDir,
      node,
      envBinary: bins.env,
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: this.studentWorkDir, LANG: 'C.UTF-8' },
      nodeInImage:
        options.rootfs === undefined
          ? undefined
          : [
              `${HOST_LIB}/${path.basename(hostNodeLoader().loader)}`,
              '--inhibit-cache',
              '--library-path',
              HOST_LIB,
              HOST_NODE,
            ],
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
      group: { name: group.name, killAll: (options) => group.killAll(options), pids: () => group.pids() },
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
      root: options.rootfs,
    });
    this.studentEnv = built.env;
    this.envRemovals = built.removed;
    const world = await this.startWorld(options.abortSignal);
    await this.prepareWorld(world);
    this.ready = {
      world,
      netDevices: netDevices(world.initPid),
      workDirDev: statSync(this.workDir).dev,
    };
  }

  /**
   * Why this sandbox cannot be handed to a student now, re-checked cheaply (reads only): it
   * was never used, its world (namespaces, init, shell) is the one that passed the network
   * check, its network namespace holds the same interfaces, its quota is still mounted at
   * the working directory, and the kernel still reads back every limit. Empty: it can be.
   */
  async readinessProblems(): Promise<string[]> {
    const out: string[] = [];
    const ready = this.ready;
    if (this.destroyed) return ['it was destroyed'];
    if (ready === undefined) return ['it is not built'];
    if (this.used || this.reaped !== undefined || this.reaping !== undefined) return ['it was used'];
    if (this.world !== ready.world || !ready.world.alive())
      out.push('the world that passed the network check is gone');
    else if (this.shell?.world !== ready.world) out.push('its shell is gone');
    else {
      const devices = netDevices(ready.world.initPid);
      if (devices !== ready.netDevices)
        out.push(`its network namespace changed: ${devices || '(unreadable)'}, was ${ready.netDevices}`);
    }
    const dev = statSync(this.workDir, { throwIfNoEntry: false })?.dev;
    if (dev !== ready.workDirDev) out.push(`the disk quota is no longer mounted at ${this.workDir}`);
    out.push(...(await this.limits.group.recheck()));
    return out;
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
    const inside: BindMount[] = [
      { source: path.join(this.dir, 'home'), target: '/home', writable: false, noexec: true },
      { source: this.workDir, target: this.studentWorkDir, writable: true },
      { source: path.join(this.dir, 'passwd'), target: '/etc/passwd', writable: false },
      { source: path.join(this.dir, 'group'), target: '/etc/group', writable: false },
    ];
    const rootfs = this.options.rootfs;
    // In an image the file tools run the host's Node.js through its own loader and
    // libraries, bound read-only into the image (the student runs them as itself, nothing more).
    const nodeBinds: BindMount[] =
      rootfs === undefined
        ? []
        : [
            { source: hostNodeLoader().libDir, target: HOST_LIB, writable: false },
            { source: realpathSync(this.node), target: HOST_NODE, writable: false },
          ];
    const image =
      rootfs === undefined ? undefined : imageBinds(rootfs, [...inside, ...nodeBinds], { dev: true });
    return planMounts({
      hostname: this.hostname,
      loopback: true,
      dev: { maxPtys: STUDENT_MAX_PTYS },
      tmpfs: [
        { path: '/tmp', sizeBytes: limits.tmpBytes, mode: '1777' },
        { path: '/dev/shm', sizeBytes: limits.shmBytes, mode: '1777' },
      ],
      earlyBinds: image?.earlyBinds ?? [],
      binds: [...inside, ...(image?.binds ?? [])],
      covers: [...this.hidden, ...hostViewHidden(this.options.hostView)],
      emptyFile: path.join(this.dir, 'empty'),
    });
  }

  /** Start namespaces, mounts and init (a new generation). On failure the caller stops it. */
  private async startWorld(abortSignal?: AbortSignal): Promise<World> {
    const plan = this.mountPlan();
    const world = new World({
      bins: this.bins,
      syscallFilter: this.syscallFilter,
      prefix: this.limits.group.launchPrefix(),
      directives: plan.directives,
      writable: plan.writable,
      setupTimeoutMs: this.options.setupTimeoutMs,
      abortSignal,
      studentRoot: this.options.rootfs === undefined ? undefined : IMAGE_ROOT,
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
    const verdict = await checkWorldNetwork({
      world,
      uid: this.uid,
      bins: this.bins,
      network: this.options.network,
    });
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

  /** Wait (bounded) until no process of the uid is left, zombies aside, and the init has exited. */
  /** Until the namespace init (root's process) has exited, or `timeoutMs`: then the checks after report it. */
  private async waitForInitExit(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    const init = this.world?.initIdentity;
    for (let pause = 2; init !== undefined && isSameProcessAlive(init); pause = Math.min(pause * 2, 50)) {
      if (performance.now() > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  limitEvents(): Promise<LimitEvent[]> {
    if (!this.limitsMade) return Promise.resolve([]);
    return this.limits.events();
  }

  exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    this.used = true;
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
    this.used = true;
    return this.serialize(async () => {
      const started = performance.now();
      await this.forceRebuild(RESTART_NOTICE);
      return { networkCheck: this.networkCheck, durationMs: Math.round(performance.now() - started) };
    });
  }

  reap(): Promise<ConfirmedReapRecord> {
    // A confirmed reap stands until the sandbox is used again; an unconfirmed one is tried again
    // (teardown must not trust a record that says a process survived).
    if (
      this.reaped !== undefined &&
      this.reaped.generation === this.generation &&
      this.reaped.record.confirmedEmpty
    ) {
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
    await this.rebuilding?.catch(() => undefined);
    // A teardown that meets a passing host fault (a full file table, a helper starved of
    // memory) tries again, twice, before it gives up and keeps the uid leased: a long-running
    // harness must not lose a lease to every transient failure.
    const state: TeardownState = {
      reap: undefined,
      limitEvents: [],
      removed: false,
      ipcDone: false,
      vethDone: false,
    };
    let leftovers = await this.teardownOnce(state);
    for (const pauseMs of [250, 1000]) {
      if (leftovers.length === 0) break;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
      leftovers = await this.teardownOnce(state);
    }
    if (leftovers.length === 0) {
      rmSync(this.dir, { recursive: true, force: true });
      this.lease.release();
      this.admission.release();
    }
    const report: TeardownReport = {
      reap: state.reap,
      limitEvents: state.limitEvents,
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

  /** One pass of the teardown: what is still left afterwards (empty: everything is gone). */
  private async teardownOnce(state: TeardownState): Promise<string[]> {
    const leftovers: string[] = [];
    try {
      state.reap = await this.reap();
      if (!state.reap.confirmedEmpty)
        leftovers.push(`student processes of uid ${this.uid} survived the reap`);
      // Confirmed means none can run again, and reapStudent (awaitExit) has also seen every
      // exit of the uid's processes: what the kernel was still tearing down is gone before the
      // uid, its group and its IPC objects are let go. The namespace init is root's process,
      // not the uid's: its exit is waited for here.
      else await this.waitForInitExit(this.options.reapDeadlineMs);
    } catch (error) {
      leftovers.push(`reaping failed: ${errorText(error)}`);
      await this.world?.stop();
    }
    if (this.world?.initIdentity !== undefined && isSameProcessAlive(this.world.initIdentity)) {
      leftovers.push(`the namespace init ${this.world.initPid} is still alive`);
    }
    // Independent of each other once every process is gone: IPC objects, group and quota, veth.
    const peerNetns = this.options.network.mode === 'allowList' ? this.options.network.peerNetns : undefined;
    const veth = this.veth;
    const [ipc, removal, vethLeft] = await Promise.allSettled([
      state.ipcDone ? Promise.resolve(undefined) : reclaimIpc(this.uid),
      state.removed || !this.limitsMade ? Promise.resolve(undefined) : this.limits.remove(),
      state.vethDone || veth === undefined
        ? Promise.resolve(false)
        : tearDownAllowList({ ip: this.bins.ip, hostEnd: veth.hostEnd, peerNetns }).then(() =>
            allowListLinkExists({ ip: this.bins.ip, hostEnd: veth.hostEnd, peerNetns }),
          ),
    ]);
    if (ipc.status === 'rejected') leftovers.push(`IPC reclaim failed: ${errorText(ipc.reason)}`);
    else state.ipcDone = true;
    if (removal.status === 'fulfilled') {
      if (removal.value !== undefined) state.limitEvents = removal.value.events;
      state.removed = true;
    } else leftovers.push(`removing the group and quota failed: ${errorText(removal.reason)}`);
    if (vethLeft.status === 'rejected') leftovers.push(`removing veth failed: ${errorText(vethLeft.reason)}`);
    else if (vethLeft.value && veth !== undefined) leftovers.push(`veth ${veth.hostEnd} still exists`);
    else state.vethDone = true;
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
    return leftovers;
  }
}

/** What the passes of one teardown have done so far (each step runs until it succeeds once). */
interface TeardownState {
  reap: ConfirmedReapRecord | undefined;
  limitEvents: readonly LimitEvent[];
  removed: boolean;
  ipcDone: boolean;
  vethDone: boolean;
}

function destroyedError(): SandboxError {
  return new SandboxError('DESTROYED', 'the sandbox was destroyed: using it after destroy() is a caller bug');
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The interface names of a network namespace, from its init's `/proc/<pid>/net/dev` ('' when unreadable). */
function netDevices(initPid: number): string {
  try {
    return readFileSync(`/proc/${initPid}/net/dev`, 'latin1')
      .split('\n')
      .slice(2)
      .map((line) => line.split(':')[0]!.trim())
      .filter(Boolean)
      .sort()
      .join(',');
  } catch {
    return '';
  }
}

/**
 * Why `sandbox` (made by {@link createSandbox}) cannot be handed to a student now: see
 * `SandboxImpl.readinessProblems`. Empty: it can be.
 * @throws BadArgumentError for a sandbox this package did not make.
 */
export function readinessProblems(sandbox: Sandbox): Promise<string[]> {
  if (!(sandbox instanceof SandboxImpl)) {
    throw new BadArgumentError('not a sandbox made by createSandbox()', { field: 'sandbox' });
  }
  return sandbox.readinessProblems();
}
