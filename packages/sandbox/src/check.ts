import { readlinkSync } from 'node:fs';
import { z } from 'zod';
import { MiB, parseOptions } from '@karotte/base';
import { studentLimitsSchema } from '@karotte/limits';
import { SandboxError } from './errors.js';
import { DEFAULT_SANDBOX_STATE_DIR } from './options.js';
import { createSandbox, type Sandbox } from './sandbox.js';
import { hostBudgets, probeHostLimits } from './seams.js';
import syscallProbe from './programs/syscall-probe.pl?raw';

/**
 * The syscall filter's proof (programs/syscall-probe.pl): run by perl as the student, it tries
 * every call class the filter refuses and a few that must stay allowed, one line each
 * (`<name> ok` or `<name> <errno>`). Argument: a shared read-only host file to probe.
 */
export const SYSCALL_PROBE: string = syscallProbe;

/** Probe lines that must succeed under the filter; every other line must be refused. */
const PROBE_ALLOWED = new Set(['socket_inet', 'socket_netlink_route', 'fadvise_normal', 'getpid']);

/** How a defense is enforced on this host. */
export type DefenseContract = 'prevented' | 'detected_and_reaped' | 'not_supported';

/** One defense and how this host enforces it. JSON-serialisable. */
export interface DefenseReport {
  readonly name: string;
  readonly contract: DefenseContract;
  /** The mechanism (`PID namespace`, `cgroup v1 memory.limit_in_bytes`, …). */
  readonly mechanism: string;
  /** What was observed: the probe's evidence, or why the defense is missing. */
  readonly reason: string;
}

/** What {@link checkHost} found. JSON-serialisable; `karotte check` prints it. */
export interface HostCheck {
  /** True when every defense is `prevented` (the kernel enforces it). */
  readonly ok: boolean;
  readonly root: boolean;
  readonly defenses: readonly DefenseReport[];
  readonly durationMs: number;
}

/** Options of {@link checkHost}. */
export const checkHostOptionsSchema = z
  .object({
    /** State directory of the probe sandbox. @default '/run/karotte/sandbox' */
    stateDir: z.string().startsWith('/').default(DEFAULT_SANDBOX_STATE_DIR),
    /** Cancels the check. */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();
export type CheckHostOptions = z.input<typeof checkHostOptionsSchema>;

/** Every defense a sandbox needs, in the order `karotte check` prints them. */
export const DEFENSE_NAMES = [
  'user_separation',
  'no_privileges',
  'pid_namespace',
  'mount_namespace',
  'read_only_host',
  'ipc_namespace',
  'uts_namespace',
  'network_isolation',
  'syscall_filter',
  'private_devices',
  'host_budgets',
  'memory',
  'pids',
  'disk_bytes',
  'disk_inodes',
  'core_dumps',
  'locked_memory',
  'oom_preference',
  'reaping',
  'rootless_tier',
] as const;

const ROOTLESS: DefenseReport = {
  name: 'rootless_tier',
  contract: 'not_supported',
  mechanism: 'user namespaces',
  reason:
    'no rootless tier is offered: a user-namespace sandbox cannot give a fresh host uid, cgroup limits or a disk quota; run as root',
};

const PROBE = [
  'echo "uid=$(id -u) gid=$(id -g)"',
  'grep -E "^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):" /proc/self/status',
  'for n in pid mnt ipc uts net; do echo "ns-$n=$(readlink /proc/self/ns/$n)"; done',
  'echo "procs=$(ls -d /proc/[0-9]* | wc -l)"',
  'echo "oom=$(cat /proc/self/oom_score_adj)"',
  'echo "core=$(ulimit -c)"',
  'echo "memlock=$(ulimit -l)"',
  'touch /var/tmp/karotte-check 2>/dev/null && echo "rw=/var/tmp" || echo "rw=none"',
  'touch ~/probe && echo "home=writable"',
  'echo "ptmx=$(readlink /dev/ptmx)"',
  'echo "devpts=$(grep -c " - devpts karotte-pts " /proc/self/mountinfo)"',
  'echo "devs=$(ls -A /dev | tr "\\n" " ")"',
].join('; ');

function parseProbe(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^([A-Za-z-]+)[=:]\s*(.*)$/.exec(line);
    if (match) out.set(match[1]!, match[2]!.trim());
  }
  return out;
}

/**
 * Probe what this host really enforces: build a small real sandbox, look at it from inside as
 * the student, probe the limits for real (@karotte/limits' probe), tear it down and confirm
 * nothing survived. Never throws for a missing defense: it reports `not_supported` with the
 * reason.
 */
export async function checkHost(options: CheckHostOptions = {}): Promise<HostCheck> {
  const parsed = parseOptions(checkHostOptionsSchema, options, 'check options');
  const started = performance.now();
  const root = process.geteuid?.() === 0;
  const defenses: DefenseReport[] = [];
  const add = (name: string, contract: DefenseContract, mechanism: string, reason: string): void => {
    defenses.push({ name, contract, mechanism, reason });
  };
  const finish = (): HostCheck => {
    defenses.push(ROOTLESS);
    const ok = defenses.every(
      (defense) => defense.contract === 'prevented' || defense.name === 'rootless_tier',
    );
    return { ok, root, defenses, durationMs: Math.round(performance.now() - started) };
  };
  const missingAll = (reason: string): HostCheck => {
    for (const name of DEFENSE_NAMES)
      if (name !== 'rootless_tier') add(name, 'not_supported', 'none', reason);
    return finish();
  };
  if (!root) return missingAll('not root: the sandbox needs root for users, namespaces, cgroups and mounts');

  let box: Sandbox;
  try {
    box = await createSandbox({
      stateDir: parsed.stateDir,
      limits: { memoryBytes: 128 * MiB, pids: 64, diskBytes: 8 * MiB, tmpBytes: 4 * MiB, shmBytes: MiB },
      ...(parsed.abortSignal === undefined ? {} : { abortSignal: parsed.abortSignal }),
    });
  } catch (error) {
    if (SandboxError.isInstance(error)) {
      const reason = error.missing.length > 0 ? error.missing.join('; ') : error.message;
      return missingAll(reason);
    }
    return missingAll(error instanceof Error ? error.message : String(error));
  }
  try {
    const probe = await box.exec(PROBE, { timeoutMs: 30_000 });
    const seen = parseProbe(probe.stdout);
    const uid = String(box.uid);
    const uidOk =
      seen.get('uid') === `${uid} gid=${uid}` &&
      seen.get('Uid') === `${uid}\t${uid}\t${uid}\t${uid}`.replace(/\t/g, '\t');
    add(
      'user_separation',
      uidOk && (seen.get('Groups') ?? '') === '' ? 'prevented' : 'not_supported',
      'a fresh uid/gid from a reserved range, no supplementary groups, no subordinate ids',
      `student ran as uid ${seen.get('uid') ?? '?'}, groups "${seen.get('Groups') ?? '?'}"`,
    );
    const capsZero = ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'].every(
      (cap) => seen.get(cap) === '0000000000000000',
    );
    add(
      'no_privileges',
      capsZero && seen.get('NoNewPrivs') === '1' ? 'prevented' : 'not_supported',
      'setpriv: no_new_privs, empty capability and bounding sets; every reachable mount nosuid',
      `NoNewPrivs=${seen.get('NoNewPrivs') ?? '?'}, CapEff=${seen.get('CapEff') ?? '?'}, CapBnd=${seen.get('CapBnd') ?? '?'}`,
    );
    const nsRow = (name: string, ns: string, mechanism: string, extra = ''): void => {
      const inside = seen.get(`ns-${ns}`);
      const outside = readlinkSync(`/proc/self/ns/${ns}`);
      add(
        name,
        inside !== undefined && inside !== '' && inside !== outside ? 'prevented' : 'not_supported',
        mechanism,
        `inside ${inside ?? '?'}, harness ${outside}${extra}`,
      );
    };
    nsRow(
      'pid_namespace',
      'pid',
      'unshare --pid with its own /proc',
      `, ${seen.get('procs') ?? '?'} processes visible`,
    );
    nsRow(
      'mount_namespace',
      'mnt',
      'unshare --mount, private propagation; hidden paths covered by empty read-only tmpfs',
    );
    add(
      'read_only_host',
      seen.get('rw') === 'none' && seen.get('home') === 'writable' ? 'prevented' : 'not_supported',
      'every reachable mount read-only and nosuid, proven from the namespace mount table; writable: working directory, /tmp, /dev/shm (nosuid, nodev)',
      `write to /var/tmp: ${seen.get('rw') === 'none' ? 'refused' : 'allowed'}; working directory ${seen.get('home') ?? 'not writable'}`,
    );
    nsRow('ipc_namespace', 'ipc', 'unshare --ipc (SysV and POSIX queues die with it)');
    nsRow('uts_namespace', 'uts', 'unshare --uts');
    add(
      'network_isolation',
      box.networkCheck.ok ? 'prevented' : 'not_supported',
      'own network namespace with loopback only; route lookups from inside as the student',
      box.networkCheck.ok
        ? `${box.networkCheck.probes.length} forbidden addresses unroutable, loopback control passed`
        : box.networkCheck.failures.join('; '),
    );
    await box.files.write({ path: '.karotte-syscall-probe.pl', content: SYSCALL_PROBE });
    const calls = await box.exec('perl .karotte-syscall-probe.pl /usr/bin/perl', { timeoutMs: 30_000 });
    const lines = calls.stdout
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
    const leaks = lines.filter(([name, result]) => (result === 'ok') !== PROBE_ALLOWED.has(name ?? ''));
    add(
      'syscall_filter',
      calls.exitCode === 0 && lines.length >= 20 && leaks.length === 0 ? 'prevented' : 'not_supported',
      'seccomp-BPF on every student and grader process (keyrings, perf, AIO and io_uring, namespaces and mounts, ptrace, AF_VSOCK and host-wide netlink, page-cache probes and evictors refused; foreign ABIs killed)',
      leaks.length === 0 && calls.exitCode === 0
        ? `${lines.length - PROBE_ALLOWED.size} refused calls tried from inside as the student, all refused; residual: the timing of plain reads of shared host files (a cold read is slower than a warm one) is still a weak channel between episodes`
        : `allowed from inside: ${leaks.map(([name]) => name).join(', ') || `probe exit ${String(calls.exitCode)}: ${calls.stderr.slice(0, 300)}`}`,
    );
    const devs = seen.get('devs') ?? '';
    add(
      'private_devices',
      seen.get('ptmx') === 'pts/ptmx' &&
        seen.get('devpts') === '1' &&
        !/\b(sd|nvme|vd|loop|kmsg|mem)\w*/.test(devs)
        ? 'prevented'
        : 'not_supported',
      "the world's own read-only /dev (null, zero, full, random, urandom, tty) and a private devpts instance with a pty budget: the host's ptys and devices are out of reach",
      `/dev inside: ${devs.trim()}; /dev/ptmx -> ${seen.get('ptmx') ?? '?'}`,
    );
    const budgets = hostBudgets();
    const gib = (bytes: number): string => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
    add(
      'host_budgets',
      budgets.memoryBytes > 0 && budgets.files > 0 ? 'prevented' : 'not_supported',
      'admission: every episode reserves its memory limit and pids × nofile open files in a host-wide ledger before it starts, and waits or is refused when they do not fit',
      `all episodes together: ${gib(budgets.memoryBytes)} of memory (RAM less the harness headroom) and ${budgets.files} open files (80 % of fs.file-max); a task without a memory limit gets ${gib(budgets.defaultEpisodeMemoryBytes)}`,
    );
    const limits = await probeHostLimits();
    const limitRow = (name: string, key: string): void => {
      const probed = (
        limits.limits as Record<
          string,
          { contract: DefenseContract; mechanism: string; reason: string } | undefined
        >
      )[key];
      if (probed === undefined) add(name, 'not_supported', 'none', `@karotte/limits did not probe ${key}`);
      else add(name, probed.contract, probed.mechanism, probed.reason);
    };
    limitRow('memory', 'memory');
    limitRow('pids', 'pids');
    limitRow('disk_bytes', 'disk_bytes');
    limitRow('disk_inodes', 'disk_inodes');
    add(
      'core_dumps',
      seen.get('core') === '0' ? 'prevented' : 'not_supported',
      'RLIMIT_CORE 0 (prlimit in the launch prefix)',
      `ulimit -c inside: ${seen.get('core') ?? '?'}`,
    );
    // perf ring buffers and mlock() pin memory the v1 memory cgroup never sees; RLIMIT_MEMLOCK
    // bounds both per process (perf_event_open is refused by the filter besides).
    // The check's sandbox asks for no memlock of its own: it must read back the default.
    const memlockKiB = Number(seen.get('memlock'));
    const defaultKiB = studentLimitsSchema.parse({}).memlockBytes / 1024;
    add(
      'locked_memory',
      memlockKiB === defaultKiB ? 'prevented' : 'not_supported',
      `RLIMIT_MEMLOCK ${defaultKiB} KiB (prlimit in the launch prefix): pinned memory the memory cgroup does not charge`,
      `ulimit -l inside: ${seen.get('memlock') ?? '?'} KiB`,
    );
    add(
      'oom_preference',
      seen.get('oom') === '1000' ? 'prevented' : 'not_supported',
      'oom_score_adj 1000 set before the first student instruction',
      `oom_score_adj inside: ${seen.get('oom') ?? '?'}`,
    );
  } catch (error) {
    add('probe', 'not_supported', 'a real sandbox', error instanceof Error ? error.message : String(error));
  }
  try {
    const report = await box.destroy();
    add(
      'reaping',
      report.reap?.confirmedEmpty === true && report.leftovers.length === 0 ? 'prevented' : 'not_supported',
      'PID-namespace init killed (the kernel kills the namespace), then @karotte/proc-reaper proves the uid empty and reclaims its SysV IPC, POSIX queues and kernel keys',
      report.reap?.confirmedEmpty === true
        ? `confirmed empty after ${report.reap.passes} pass(es); no mounts, groups or leases left`
        : report.leftovers.join('; '),
    );
  } catch (error) {
    add('reaping', 'not_supported', 'teardown', error instanceof Error ? error.message : String(error));
  }
  return finish();
}
