import { randomBytes } from 'node:crypto';
import {
  accessSync,
  constants,
  existsSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { BadArgumentError, parseOptions, resolveTrustedBinary } from '@karotte/base';
import {
  allowListLinkExists,
  defaultSandboxAddress,
  setUpAllowList,
  tearDownAllowList,
  vethNames,
} from './allow-list.js';
import { resolveSandboxBinaries, type SandboxBinaries } from './binaries.js';
import { buildStudentEnv, type EnvRemoval } from './env.js';
import { SandboxError, isSandboxError } from './errors.js';
import { createFileTools, type SandboxFiles } from './file-tools.js';
import {
  allocateIdentity,
  listLeases,
  reclaimStaleLease,
  type IdentityLease,
  type LeaseRecord,
} from './identity.js';
import { runInside } from './inside.js';
import {
  FORBIDDEN_TARGETS,
  NETWORK_PROBE_SCRIPT,
  dnsServers,
  hostAddresses,
  judgeNetwork,
  probeOutputSchema,
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
import { isSameProcessAlive, processesOfUid } from './procfs.js';
import {
  createLimits,
  reapStudent,
  reclaimIpc,
  recoverLimitLeftovers,
  type ConfirmedReapRecord,
  type EpisodeLimits,
  type LimitEvent,
} from './seams.js';
import { PersistentShell, type ExecResult } from './shell.js';
import { ensureRootOnlyDir } from './state-dir.js';
import { World } from './world.js';

/** Karotte state directories covered inside every sandbox (besides the caller's hiddenPaths). */
export const ALWAYS_COVERED: readonly string[] = Object.freeze(['/root', '/run/karotte', '/var/lib/karotte']);

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

/** Crash-recovery record of one sandbox, in `<stateDir>/<id>/manifest.json`. */
const manifestSchema = z
  .object({
    sandboxId: z.string(),
    uid: z.number().int(),
    initPid: z.number().int(),
    initStartTime: z.number().int(),
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
  /** The network check taken before the first step. */
  readonly networkCheck: NetworkVerdict;
  /** The episode's limits (group and quota) from @karotte/limits. */
  readonly limits: EpisodeLimits;
  /** Environment variables removed or changed on their way to the student, with reasons. */
  readonly envRemovals: readonly EnvRemoval[];
  /** Run a command in the student's persistent shell. Outcomes (timeouts, exits) are data. */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  readonly files: SandboxFiles;
  /** Kill every student process and prove it (before custody). Idempotent; destroy() calls it. */
  reap(): Promise<ConfirmedReapRecord>;
  /** Remove everything: processes, namespaces, mounts, cgroups, veth, identity. Idempotent. */
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
    isSameProcessAlive(manifest.initPid, manifest.initStartTime)
  ) {
    try {
      process.kill(manifest.initPid, 'SIGKILL');
    } catch {
      // gone
    }
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

/** Reclaim every lease in `stateDir` whose harness died. Returns the uids reclaimed. */
export async function reclaimStaleSandboxes(stateDir: string): Promise<number[]> {
  const out: number[] = [];
  for (const lease of listLeases(stateDir)) {
    if (!lease.stale) continue;
    if (
      await reclaimStaleLease(stateDir, lease.uid, (record, uid) => reclaimDeadSandbox(stateDir, record, uid))
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
    if (isSandboxError(error) && error.code === 'HOST_UNSUPPORTED') missing.push(...error.missing);
    else throw error;
  }
  const hidden = resolvedHidden([...ALWAYS_COVERED, parsed.stateDir, ...parsed.hiddenPaths]);
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
  const lease = await allocateIdentity({
    stateDir: parsed.stateDir,
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

class SandboxImpl implements Sandbox {
  readonly id: string;
  readonly uid: number;
  readonly gid: number;
  readonly userName: string;
  readonly studentWorkDir: string;
  workDir = '';
  networkCheck!: NetworkVerdict;
  limits!: EpisodeLimits;
  envRemovals: readonly EnvRemoval[] = [];
  readonly files: SandboxFiles;
  private readonly dir: string;
  private world: World | undefined;
  private shell: PersistentShell | undefined;
  private studentEnv: Record<string, string> = {};
  private limitsMade = false;
  private reapRecord: ConfirmedReapRecord | undefined;
  private reaping: Promise<ConfirmedReapRecord> | undefined;
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
      world: () => this.liveWorld(),
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
      initStartTime: this.world?.initStartTime ?? 0,
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
      memoryBytes: options.limits.memoryBytes,
      pidsMax: options.limits.pidsMax,
      cpuWeight: options.limits.cpuWeight,
      nofile: options.limits.nofile,
      fsizeBytes: options.limits.fsizeBytes,
      diskBytes: options.limits.diskBytes,
      diskInodes:
        options.limits.diskInodes ??
        Math.max(64, Math.min(65_536, Math.floor(options.limits.diskBytes / 16_384))),
      abortSignal: options.abortSignal,
    });
    this.limitsMade = true;
    const quota = this.limits.quota;
    if (quota === null) throw new SandboxError('SETUP_FAILED', 'the limits package gave no disk quota');
    this.workDir = quota.path;
    const files = passwdFiles(this.userName, this.uid, this.studentWorkDir, bins.bash);
    writeFileSync(path.join(this.dir, 'passwd'), files.passwd, { mode: 0o644 });
    writeFileSync(path.join(this.dir, 'group'), files.group, { mode: 0o644 });
    writeFileSync(path.join(this.dir, 'empty'), '', { mode: 0o000 });
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
    await this.startWorld();
    if (options.network.mode === 'allowList') {
      this.veth = vethNames(this.id);
      this.writeManifest();
      await setUpAllowList({
        ip: bins.ip,
        nsenter: bins.nsenter,
        initPid: this.world!.initPid,
        hostEnd: this.veth.hostEnd,
        sandboxEnd: this.veth.sandboxEnd,
        sandboxAddress: options.network.sandboxAddress ?? defaultSandboxAddress(this.id),
        allow: options.network.allow,
        peerNetns: options.network.peerNetns,
      });
    }
    this.networkCheck = await this.checkNetwork();
    if (!this.networkCheck.ok) {
      throw new SandboxError(
        'NETWORK_NOT_ISOLATED',
        `the network check failed, refusing the episode: ${this.networkCheck.failures.join('; ')}`,
        { detail: this.networkCheck },
      );
    }
  }

  /** Directives of the root setup, in the order that makes them sound (see SETUP_SCRIPT). */
  private directives(): string[] {
    const { limits } = this.options;
    const d: string[] = ['lo', 'hostname', this.hostname, 'sweep'];
    d.push('tmpfs', '/tmp', `size=${limits.tmpBytes},mode=1777,nosuid,nodev`);
    d.push('tmpfs', '/dev/shm', `size=${limits.shmBytes},mode=1777,nosuid,nodev`);
    d.push('tmpfs', '/home', 'size=64k,nr_inodes=16,mode=755,nosuid,nodev');
    d.push('mkdir', this.studentWorkDir, '755');
    d.push('bind', this.workDir, this.studentWorkDir, 'rw,nosuid,nodev');
    d.push('remount', '/home', 'ro,nosuid,nodev');
    d.push('bind', path.join(this.dir, 'passwd'), '/etc/passwd', 'ro,nosuid,nodev');
    d.push('bind', path.join(this.dir, 'group'), '/etc/group', 'ro,nosuid,nodev');
    const empty = path.join(this.dir, 'empty');
    for (const hidden of this.hidden) {
      if (hidden === '/home' || hidden === '/tmp' || hidden === '/dev/shm') continue;
      d.push('cover', hidden, empty);
    }
    return d;
  }

  private async startWorld(): Promise<void> {
    const world = new World({
      bins: this.bins,
      prefix: this.limits.group.launchPrefix(),
      directives: this.directives(),
      setupTimeoutMs: this.options.setupTimeoutMs,
      abortSignal: this.options.abortSignal,
    });
    this.world = world;
    await world.start();
    this.writeManifest();
  }

  private liveWorld(): World {
    if (this.destroyed || this.reapRecord !== undefined || this.reaping !== undefined) {
      throw new SandboxError('DESTROYED', 'the sandbox was reaped or destroyed');
    }
    if (this.world === undefined || !this.world.alive()) {
      throw new SandboxError('DESTROYED', 'the sandbox namespaces are gone (their init died)');
    }
    return this.world;
  }

  async checkNetwork(): Promise<NetworkVerdict> {
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
      world: this.liveWorld(),
      uid: this.uid,
      program: [
        this.bins.env,
        '-i',
        '-C',
        this.studentWorkDir,
        'PATH=/usr/bin:/bin',
        this.node,
        '-e',
        NETWORK_PROBE_SCRIPT,
      ],
      stdin: JSON.stringify(targets),
      timeoutMs: 30_000,
      maxStdoutBytes: 256 * 1024,
    });
    const text = output.stdout.toString('utf8');
    let parsed: unknown;
    try {
      // eslint-disable-next-line no-restricted-syntax -- bounded output of our own probe, validated by the schema
      parsed = JSON.parse(text);
    } catch {
      throw new SandboxError(
        'SETUP_FAILED',
        `the network check did not run: ${output.stderr.slice(0, 1000) || `exit ${String(output.exitCode ?? output.signal)}`}`,
      );
    }
    const result = probeOutputSchema.safeParse(parsed);
    if (!result.success)
      throw new SandboxError('SETUP_FAILED', 'the network check answered something unexpected', {
        cause: result.error,
      });
    return judgeNetwork(mode, result.data, Math.round(performance.now() - started));
  }

  exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (typeof command !== 'string')
      throw new BadArgumentError('command must be a string', { field: 'command' });
    const parsed = parseOptions(execOptionsSchema, options, 'exec options');
    const world = this.liveWorld();
    this.shell ??= new PersistentShell({
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
    return this.shell.run(command, {
      timeoutMs: parsed.timeoutMs ?? this.options.commandTimeoutMs,
      abortSignal: parsed.abortSignal,
    });
  }

  reap(): Promise<ConfirmedReapRecord> {
    if (this.reapRecord !== undefined) return Promise.resolve(this.reapRecord);
    this.reaping ??= (async () => {
      await this.shell?.close();
      // Killing PID 1 first makes the kernel kill the whole PID namespace at once; the reaper
      // then proves, by cgroup, uid (in-cohort kill) and /proc sweep, that nothing survived.
      await this.world?.stop();
      const record = await reapStudent({
        uid: this.uid,
        limits: this.limitsMade ? this.limits : undefined,
        initPid: undefined,
        deadlineMs: this.options.reapDeadlineMs,
      });
      this.reapRecord = record;
      return record;
    })();
    return this.reaping;
  }

  destroy(): Promise<TeardownReport> {
    this.destroying ??= this.teardown();
    return this.destroying;
  }

  private async teardown(): Promise<TeardownReport> {
    const started = performance.now();
    const leftovers: string[] = [];
    let reapRecord: ConfirmedReapRecord | undefined;
    try {
      reapRecord = await this.reap();
      if (!reapRecord.confirmedEmpty)
        leftovers.push(`student processes of uid ${this.uid} survived the reap`);
    } catch (error) {
      leftovers.push(`reaping failed: ${error instanceof Error ? error.message : String(error)}`);
      await this.world?.stop();
    }
    this.destroyed = true;
    if (
      this.world !== undefined &&
      this.world.initPid > 0 &&
      isSameProcessAlive(this.world.initPid, this.world.initStartTime)
    ) {
      leftovers.push(`the namespace init ${this.world.initPid} is still alive`);
    }
    try {
      await reclaimIpc(this.uid);
    } catch (error) {
      leftovers.push(`IPC reclaim failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    let limitEvents: readonly LimitEvent[] = [];
    if (this.limitsMade) {
      try {
        limitEvents = (await this.limits.remove()).events;
      } catch (error) {
        leftovers.push(
          `removing the group and quota failed: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
    if (this.veth !== undefined) {
      const peerNetns =
        this.options.network.mode === 'allowList' ? this.options.network.peerNetns : undefined;
      await tearDownAllowList({ ip: this.bins.ip, hostEnd: this.veth.hostEnd, peerNetns });
      if (await allowListLinkExists({ ip: this.bins.ip, hostEnd: this.veth.hostEnd, peerNetns })) {
        leftovers.push(`veth ${this.veth.hostEnd} still exists`);
      }
    }
    if (processesOfUid(this.uid).length > 0) leftovers.push(`processes of uid ${this.uid} are alive`);
    if (this.workDir !== '' && readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${this.workDir} `)) {
      leftovers.push(`${this.workDir} is still mounted`);
    }
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

/** True when `value` can be spawned by the student (used by checks and tests). */
export function isExecutableByOthers(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return (statSync(file).mode & constants.S_IXOTH) !== 0;
  } catch {
    return false;
  }
}
