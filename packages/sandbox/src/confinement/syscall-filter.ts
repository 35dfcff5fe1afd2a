// The syscall filter of every confined process (student and grader): a seccomp-BPF program
// assembled here, in TypeScript, and installed by a constant Perl loader (programs/seccomp.pl;
// perl-base is an essential Debian package, so no compiler and no native code) right after the
// privilege drop and before the program's first instruction. Filters are inherited across
// fork and execve and can never be removed: everything the program starts is filtered too.
//
// Why this shape: the calls it refuses are the ones this threat model needs refused (each with
// its reason below), on top of what the dropped capabilities already refuse; everything else
// is allowed, so ordinary programs (compilers, interpreters, test runners) run unchanged.
import { z } from 'zod';
import { BadArgumentError } from '@karotte/base';
import { SandboxError } from '../errors.js';

/** x86-64 syscall numbers of the calls the filter looks at. */
const X86_64 = {
  mincore: 27,
  madvise: 28,
  socket: 41,
  socketpair: 53,
  clone: 56,
  ptrace: 101,
  syslog: 103,
  uselib: 134,
  personality: 135,
  ustat: 136,
  sysfs: 139,
  vhangup: 153,
  pivot_root: 155,
  _sysctl: 156,
  acct: 163,
  settimeofday: 164,
  mount: 165,
  umount2: 166,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  sethostname: 170,
  setdomainname: 171,
  iopl: 172,
  ioperm: 173,
  create_module: 174,
  init_module: 175,
  delete_module: 176,
  get_kernel_syms: 177,
  query_module: 178,
  quotactl: 179,
  nfsservctl: 180,
  io_setup: 206,
  io_destroy: 207,
  io_getevents: 208,
  io_submit: 209,
  io_cancel: 210,
  lookup_dcookie: 212,
  fadvise64: 221,
  clock_settime: 227,
  mbind: 237,
  set_mempolicy: 238,
  get_mempolicy: 239,
  kexec_load: 246,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  migrate_pages: 256,
  unshare: 272,
  move_pages: 279,
  perf_event_open: 298,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  clock_adjtime: 305,
  setns: 308,
  process_vm_readv: 310,
  process_vm_writev: 311,
  kcmp: 312,
  finit_module: 313,
  kexec_file_load: 320,
  bpf: 321,
  userfaultfd: 323,
  preadv2: 327,
  pwritev2: 328,
  io_pgetevents: 333,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  clone3: 435,
  mount_setattr: 442,
  quotactl_fd: 443,
  set_mempolicy_home_node: 450,
  cachestat: 451,
  pidfd_getfd: 438,
} as const;

export type FilteredSyscall = keyof typeof X86_64;

const EPERM = 1;
const ENOSYS = 38;
const EAFNOSUPPORT = 97;
const EOPNOTSUPP = 95;

/** A call the default filter refuses outright, with the errno it gets and why. */
interface Refusal {
  readonly errno: number;
  readonly reason: string;
}

const refuse = (
  errno: number,
  reason: string,
  names: readonly FilteredSyscall[],
): [FilteredSyscall, Refusal][] => names.map((name) => [name, { errno, reason }]);

/**
 * The calls refused outright. ENOSYS where a program is expected to fall back (libaio,
 * io_uring, clone3, keyrings), EPERM elsewhere.
 */
export const REFUSED_SYSCALLS: ReadonlyMap<FilteredSyscall, Refusal> = new Map([
  ...refuse(
    ENOSYS,
    'kernel keyrings outlive the episode and are shared by uid: a channel from one episode to the next',
    ['add_key', 'request_key', 'keyctl'],
  ),
  ...refuse(EPERM, 'perf ring buffers pin memory the memory cgroup never sees', ['perf_event_open']),
  ...refuse(ENOSYS, 'AIO reserves from the host-wide fs.aio-max-nr pool; io_uring bypasses the filter', [
    'io_setup',
    'io_destroy',
    'io_getevents',
    'io_submit',
    'io_cancel',
    'io_pgetevents',
    'io_uring_setup',
    'io_uring_enter',
    'io_uring_register',
  ]),
  ...refuse(EPERM, 'userfaultfd and bpf are kernel attack surface no task needs', ['userfaultfd', 'bpf']),
  ...refuse(EPERM, 'no process may inspect or write another one’s memory, or take its descriptors', [
    'ptrace',
    'process_vm_readv',
    'process_vm_writev',
    'kcmp',
    'pidfd_getfd',
  ]),
  ...refuse(EPERM, 'mounts and namespaces are the harness’s (user namespaces would give back capabilities)', [
    'mount',
    'umount2',
    'pivot_root',
    'setns',
    'unshare',
    'open_tree',
    'move_mount',
    'fsopen',
    'fsconfig',
    'fsmount',
    'fspick',
    'mount_setattr',
  ]),
  ...refuse(ENOSYS, 'clone3 flags cannot be inspected by a filter: C libraries fall back to clone', [
    'clone3',
  ]),
  ...refuse(EPERM, 'page-cache residency probes are a timing channel between episodes', ['mincore']),
  ...refuse(ENOSYS, 'page-cache residency probes are a timing channel between episodes', ['cachestat']),
  ...refuse(EPERM, 'host administration (Docker’s default profile refuses it too)', [
    'syslog',
    'uselib',
    'ustat',
    'sysfs',
    'vhangup',
    '_sysctl',
    'acct',
    'settimeofday',
    'clock_settime',
    'clock_adjtime',
    'swapon',
    'swapoff',
    'reboot',
    'sethostname',
    'setdomainname',
    'iopl',
    'ioperm',
    'create_module',
    'init_module',
    'finit_module',
    'delete_module',
    'get_kernel_syms',
    'query_module',
    'quotactl',
    'quotactl_fd',
    'nfsservctl',
    'lookup_dcookie',
    'kexec_load',
    'kexec_file_load',
    'name_to_handle_at',
    'open_by_handle_at',
  ]),
  ...refuse(EPERM, 'NUMA policy moves memory across the host’s nodes', [
    'mbind',
    'set_mempolicy',
    'get_mempolicy',
    'move_pages',
    'migrate_pages',
    'set_mempolicy_home_node',
  ]),
]);

/** Calls allowed with some arguments only (see {@link buildSyscallFilter}). */
export const CHECKED_SYSCALLS: Readonly<Record<string, string>> = Object.freeze({
  clone: 'new namespaces (CLONE_NEW*) are refused: EPERM',
  socket:
    'only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (route and sock_diag, which are per network namespace); AF_VSOCK ignores network namespaces: EAFNOSUPPORT',
  socketpair: 'only AF_UNIX: EAFNOSUPPORT',
  fadvise64: 'POSIX_FADV_DONTNEED evicts shared page cache (a timing channel): EPERM',
  preadv2: 'RWF_NOWAIT probes page-cache residency: EOPNOTSUPP',
  pwritev2: 'RWF_NOWAIT probes page-cache residency: EOPNOTSUPP',
  madvise: 'MADV_COLD and MADV_PAGEOUT evict shared page cache: EPERM',
  personality:
    'only the personalities Docker allows (Linux, with or without ADDR_NO_RANDOMIZE, and queries): EPERM',
});

/** Names a task may loosen: every refused or checked call. */
export const LOOSENABLE_SYSCALLS: readonly string[] = Object.freeze([
  ...REFUSED_SYSCALLS.keys(),
  ...Object.keys(CHECKED_SYSCALLS),
]);

// BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const JA = 0x05;
const RET_K = 0x06;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const RET_ALLOW = 0x7fff0000;
const AUDIT_ARCH_X86_64 = 0xc000003e;
const X32_SYSCALL_BIT = 0x40000000;
/** Offsets in struct seccomp_data: nr, arch, then 64-bit args from 16 (the low word first). */
const NR = 0;
const ARCH = 4;
const argLow = (index: number): number => 16 + 8 * index;

const CLONE_NEW_FLAGS = 0x7e020000; // NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;
const NETLINK_ROUTE = 0;
const NETLINK_SOCK_DIAG = 4;
const POSIX_FADV_DONTNEED = 4;
const RWF_NOWAIT = 0x8;
const MADV_COLD = 20;
const MADV_PAGEOUT = 21;
const ALLOWED_PERSONALITIES = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff];

type Target = number | string;
interface Instruction {
  readonly code: number;
  readonly jt: Target;
  readonly jf: Target;
  readonly k: number;
}

/** A tiny assembler: instructions with label targets, resolved to the 8-bit forward offsets BPF takes. */
class Program {
  private readonly code: Instruction[] = [];
  private readonly labels = new Map<string, number>();

  label(name: string): this {
    this.labels.set(name, this.code.length);
    return this;
  }
  load(offset: number): this {
    return this.push(LD_W_ABS, 0, 0, offset);
  }
  /** If A == k go to `then`, else fall through (or go to `otherwise`). */
  jeq(k: number, then: Target, otherwise: Target = 0): this {
    return this.push(JEQ_K, then, otherwise, k);
  }
  jge(k: number, then: Target, otherwise: Target = 0): this {
    return this.push(JGE_K, then, otherwise, k);
  }
  jset(k: number, then: Target, otherwise: Target = 0): this {
    return this.push(JSET_K, then, otherwise, k);
  }
  /** Go to `to` (any distance forward: `ja` takes a 32-bit offset). */
  jump(to: string): this {
    this.far.set(this.code.length, to);
    return this.push(JA, 0, 0, 0);
  }
  ret(value: number): this {
    return this.push(RET_K, 0, 0, value);
  }
  errno(errno: number): this {
    return this.ret(RET_ERRNO | errno);
  }
  allow(): this {
    return this.ret(RET_ALLOW);
  }

  /** Instructions (by index) whose `k` is the offset to a label (`ja`). */
  private readonly far = new Map<number, string>();
  private push(code: number, jt: Target, jf: Target, k: number): this {
    this.code.push({ code, jt, jf, k });
    return this;
  }

  assemble(): Buffer {
    const out = Buffer.alloc(this.code.length * 8);
    const resolve = (at: number, target: Target): number => {
      if (typeof target === 'number') return target;
      const to = this.labels.get(target);
      if (to === undefined) throw new SandboxError('SETUP_FAILED', `unknown label ${target}`);
      const offset = to - at - 1;
      if (offset < 0 || offset > 255)
        throw new SandboxError('SETUP_FAILED', `jump to ${target} out of range (${offset})`);
      return offset;
    };
    this.code.forEach((insn, at) => {
      const farLabel = this.far.get(at);
      let k = insn.k;
      if (farLabel !== undefined) {
        const to = this.labels.get(farLabel);
        if (to === undefined || to <= at) throw new SandboxError('SETUP_FAILED', `bad jump to ${farLabel}`);
        k = to - at - 1;
      }
      out.writeUInt16LE(insn.code, at * 8);
      out.writeUInt8(resolve(at, insn.jt), at * 8 + 2);
      out.writeUInt8(resolve(at, insn.jf), at * 8 + 3);
      out.writeUInt32LE(k >>> 0, at * 8 + 4);
    });
    return out;
  }
}

/**
 * How a task loosens the filter: by name, with a reason (recorded). Strict: an unknown name
 * or a missing reason is an error naming the field.
 */
export const syscallFilterOptionsSchema = z
  .object({
    /** Calls to allow despite the default filter (names of `LOOSENABLE_SYSCALLS`). @default [] */
    allow: z
      .array(
        z
          .object({
            name: z.string().refine((name) => LOOSENABLE_SYSCALLS.includes(name), {
              error: 'is not a call the syscall filter refuses or checks',
            }),
            /** Why the task needs it (kept in the record of the episode). */
            reason: z.string().min(1).max(1000),
          })
          .strict(),
      )
      .max(64)
      .default([]),
  })
  .strict();
export type SyscallFilterOptions = z.input<typeof syscallFilterOptionsSchema>;

/**
 * Assemble the filter (x86-64). A foreign ABI (i386 `int 0x80`, x32) kills the process: it
 * would reach the kernel under other numbers than the ones checked here.
 *
 * @throws BadArgumentError for a name that is not loosenable, or on a host that is not x86-64.
 */
export function buildSyscallFilter(options: { readonly allow?: readonly string[] } = {}): Buffer {
  if (process.arch !== 'x64') {
    throw new BadArgumentError(`the syscall filter is built for x86-64 only, not ${process.arch}`, {
      field: 'syscallFilter',
    });
  }
  const allow = new Set(options.allow ?? []);
  for (const name of allow) {
    if (!LOOSENABLE_SYSCALLS.includes(name)) {
      throw new BadArgumentError(`${name} is not a call the syscall filter refuses`, {
        field: 'syscallFilter.allow',
      });
    }
  }
  const p = new Program();
  p.load(ARCH).jeq(AUDIT_ARCH_X86_64, 0, 'kill-near');
  p.load(NR).jge(X32_SYSCALL_BIT, 'kill-near');
  // Refused outright: two instructions each (compare, return the errno).
  for (const [name, refusal] of REFUSED_SYSCALLS) {
    if (allow.has(name)) continue;
    p.jeq(X86_64[name], 0, 1).errno(refusal.errno);
  }
  const checked = Object.keys(CHECKED_SYSCALLS).filter((name) => !allow.has(name)) as FilteredSyscall[];
  for (const name of checked) p.jeq(X86_64[name], 0, 1).jump(name);
  p.allow();
  p.label('kill-near').ret(RET_KILL_PROCESS);
  for (const name of checked) {
    p.label(name);
    switch (name) {
      case 'clone':
        p.load(argLow(0)).jset(CLONE_NEW_FLAGS, 0, 1).errno(EPERM).allow();
        break;
      case 'socket':
        p.load(argLow(0))
          .jeq(AF_UNIX, 'socket-ok')
          .jeq(AF_INET, 'socket-ok')
          .jeq(AF_INET6, 'socket-ok')
          .jeq(AF_NETLINK, 0, 'socket-no')
          .load(argLow(2))
          .jeq(NETLINK_ROUTE, 'socket-ok')
          .jeq(NETLINK_SOCK_DIAG, 'socket-ok')
          .label('socket-no')
          .errno(EAFNOSUPPORT)
          .label('socket-ok')
          .allow();
        break;
      case 'socketpair':
        p.load(argLow(0)).jeq(AF_UNIX, 0, 1).allow().errno(EAFNOSUPPORT);
        break;
      case 'fadvise64':
        p.load(argLow(3)).jeq(POSIX_FADV_DONTNEED, 0, 1).errno(EPERM).allow();
        break;
      case 'preadv2':
      case 'pwritev2':
        p.load(argLow(5)).jset(RWF_NOWAIT, 0, 1).errno(EOPNOTSUPP).allow();
        break;
      case 'madvise':
        p.load(argLow(2)).jeq(MADV_COLD, 1).jeq(MADV_PAGEOUT, 0, 1).errno(EPERM).allow();
        break;
      case 'personality':
        p.load(argLow(0));
        for (const value of ALLOWED_PERSONALITIES) p.jeq(value, 'personality-ok');
        p.errno(EPERM).label('personality-ok').allow();
        break;
      default:
        throw new SandboxError('SETUP_FAILED', `no argument check for ${name}`);
    }
  }
  return p.assemble();
}
