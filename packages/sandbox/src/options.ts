import net from 'node:net';
import { z } from 'zod';
import { syscallFilterOptionsSchema } from './confinement/syscall-filter.js';
import { KiB, MiB } from '@karotte/base';
import {
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_PIDS,
  MAX_COMMAND_TIMEOUT_MS,
  studentLimitsSchema,
} from '@karotte/limits';
import { DEFAULT_PASS_ENV } from './env.js';

/** First uid of the reserved range: ids nobody else hands out (above systemd's dynamic and container ranges). */
export const DEFAULT_FIRST_UID = 2_000_000_000;
/** Size of the reserved uid range. */
export const DEFAULT_UID_COUNT = 1_000_000;
/** Where leases and per-sandbox state live (root-only 0700, covered inside every sandbox). */
export const DEFAULT_SANDBOX_STATE_DIR = '/run/karotte/sandbox';

const absolutePath = z
  .string()
  .startsWith('/')
  .max(4096)
  .refine((value) => !value.includes('\0') && !value.includes('\n'), 'must not contain NUL or newline');

const pids = studentLimitsSchema.shape.pids.unwrap();

/**
 * Student limits: `studentLimitsSchema` of `@karotte/limits` (the one schema of a student's
 * limits, with its bounds and defaults: `memoryBytes`, `pids`, `cpuWeight`, `diskBytes`,
 * `diskInodes`, `nofile`, `fsizeBytes`, `memlockBytes`), plus the sizes of the sandbox's own `/tmp` and
 * `/dev/shm`. Sizes in bytes. Strict.
 */
export const sandboxLimitsSchema = studentLimitsSchema
  .extend({
    /** Most processes and threads at once, the sandbox's own included; 16 to 4194304. @default DEFAULT_PIDS (512) */
    pids: pids.default(DEFAULT_PIDS),
    /** Size of the private /tmp (tmpfs; its pages count against memoryBytes). @default 256 MiB */
    tmpBytes: z
      .number()
      .int()
      .min(MiB)
      .default(256 * MiB),
    /** Size of the private /dev/shm (tmpfs; its pages count against memoryBytes). @default 64 MiB */
    shmBytes: z
      .number()
      .int()
      .min(MiB)
      .default(64 * MiB),
  })
  .strict();

/**
 * An address the student may reach (e.g. a model proxy). Only the address is enforced (a route
 * to it and to nothing else); there is no firewall, so every port and protocol of that address
 * is reachable.
 */
export const allowedEndpointSchema = z
  .object({
    address: z.string().refine((value) => net.isIPv4(value), 'must be an IPv4 address'),
    /** The port the task means. Recorded, NOT enforced: every port of `address` is reachable. */
    port: z.number().int().min(1).max(65_535),
  })
  .strict();

/** Network of the sandbox. */
export const networkOptionsSchema = z.discriminatedUnion('mode', [
  z.object({ mode: z.literal('loopback') }).strict(),
  z
    .object({
      mode: z.literal('allowList'),
      /** The only addresses reachable (IPv4; ports are not filtered). Each gets a host route through a veth pair; nothing else is routed. */
      allow: z.array(allowedEndpointSchema).min(1).max(16),
      /**
       * Network namespace (a name under /run/netns) that holds the veth's other end; the allowed
       * addresses must be addresses of that namespace. @default the host's namespace
       */
      peerNetns: z
        .string()
        .regex(/^[A-Za-z0-9_.-]+$/)
        .optional(),
      /** Address of the sandbox's end of the veth. @default 100.127.x.y/32 derived from the sandbox */
      sandboxAddress: z
        .string()
        .refine((value) => net.isIPv4(value), 'must be an IPv4 address')
        .optional(),
    })
    .strict(),
]);

/** Options of {@link createSandbox}. Strict: a misspelled key is an error naming it. */
export const sandboxOptionsSchema = z
  .object({
    /** Student limits. @default {} */
    limits: sandboxLimitsSchema.prefault({}),
    /**
     * Host paths the student must never reach (the task directory, hidden data, harness state):
     * each is covered by an empty read-only root-only tmpfs (or file) inside the sandbox. Keep
     * them in root-only 0700 directories as well. Karotte's own state directories, /root and
     * /home are always covered. @default []
     */
    hiddenPaths: z.array(absolutePath).max(256).default([]),
    /**
     * How much of the host the student sees (read-only). `system`: only the top-level
     * directories where programs and their data live (`/usr`, `/etc`, `/opt`, `/var`, … — see
     * `SYSTEM_ROOTS`); every other top-level entry (`/work`, `/srv`, `/mnt`, a checkout with
     * copies of answer keys, …) and `/var/tmp` are covered. `all`: the whole host except
     * hiddenPaths. @default 'system'
     */
    hostView: z.enum(['system', 'all']).default('system'),
    /**
     * The student's root file system: an image's unpacked tree (`importImage()` of
     * `@karotte/sandbox/image`, a root-owned directory), mounted read-only with the sandbox's
     * own /proc, /sys, /dev, /tmp, /dev/shm, home, passwd and group bound into it. Every student
     * process is chrooted there by the trusted loader, which then drops every capability; the
     * harness runs no binary of the image as root. The image must hold bash, env and cat at
     * the paths the host has them (`/usr/bin/…` on a merged-/usr Debian or Ubuntu). Unset: the
     * host's view (`hostView`).
     */
    rootfs: absolutePath.optional(),
    /** The student's user name inside the sandbox (whoami, $USER; HOME is /home/<userName>). @default 'student' */
    userName: z
      .string()
      .regex(/^[a-z_][a-z0-9_-]{0,31}$/)
      .default('student'),
    /** Extra environment for the student (the task's own variables); loader variables are cleaned. @default {} */
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string().max(128 * KiB)).default({}),
    /** Harness variables copied to the student when set. Never put secrets here. @default ['LANG', 'LC_ALL', 'LC_CTYPE', 'TZ'] */
    passEnv: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/)).default([...DEFAULT_PASS_ENV]),
    /** Network: loopback only, or an allow-list through a veth pair. @default { mode: 'loopback' } */
    network: networkOptionsSchema.default({ mode: 'loopback' }),
    /**
     * Timeout of an exec() that gives none; at most MAX_COMMAND_TIMEOUT_MS (1 h), as for every
     * exec(). @karotte/core gives every command its own timeout and leaves this alone.
     * @default DEFAULT_COMMAND_TIMEOUT_MS (300000)
     */
    commandTimeoutMs: z
      .number()
      .int()
      .positive()
      .max(MAX_COMMAND_TIMEOUT_MS)
      .default(DEFAULT_COMMAND_TIMEOUT_MS),
    /** Output kept per stream per command: the first headBytes and the last tailBytes. */
    output: z
      .object({
        /** @default 12288 */
        headBytes: z
          .number()
          .int()
          .nonnegative()
          .max(64 * MiB)
          .default(12 * KiB),
        /** @default 4096 */
        tailBytes: z
          .number()
          .int()
          .nonnegative()
          .max(64 * MiB)
          .default(4 * KiB),
      })
      .strict()
      .prefault({}),
    /** Root-only directory of uid leases and per-sandbox state. @default '/run/karotte/sandbox' */
    stateDir: absolutePath.default(DEFAULT_SANDBOX_STATE_DIR),
    /** The reserved uid range (uid = gid). @default { first: 2000000000, count: 1000000 } */
    uidRange: z
      .object({
        first: z.number().int().min(1000).max(4_294_000_000).default(DEFAULT_FIRST_UID),
        count: z.number().int().min(1).max(100_000_000).default(DEFAULT_UID_COUNT),
      })
      .strict()
      .prefault({}),
    /** Node.js run as the student for the network check and file tools. @default process.execPath, else a trusted `node` */
    studentNode: absolutePath.optional(),
    /** Bound on building the namespaces. @default 30000 */
    setupTimeoutMs: z.number().int().positive().max(600_000).default(30_000),
    /** Bound on reaping at teardown; past it the reap record carries UNREAPABLE. @default 30000 */
    reapDeadlineMs: z.number().int().positive().max(600_000).default(30_000),
    /**
     * The syscall filter of every student process: the default refuses keyrings, perf,
     * AIO and io_uring, namespaces and mounts, ptrace, page-cache probes, AF_VSOCK and more
     * (see the README); a task loosens it by name with a reason. @default { allow: [] }
     */
    syscallFilter: syscallFilterOptionsSchema.prefault({}),
    /**
     * How long creation waits for the episode's memory and open-file budget to fit beside the
     * running episodes on this host (`@karotte/limits`' `admit`) before `HOST_BUSY`.
     * @default 120000
     */
    admissionWaitMs: z.number().int().nonnegative().max(3_600_000).default(120_000),
    /** Cancels creation (everything made so far is removed). */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

/** Options of {@link createSandbox} as a caller writes them. */
export type SandboxOptions = z.input<typeof sandboxOptionsSchema>;
/** Options after defaults. */
export type ParsedSandboxOptions = z.output<typeof sandboxOptionsSchema>;

/** Options of {@link Sandbox.exec}. */
export const execOptionsSchema = z
  .object({
    /**
     * Per-command timeout, at most MAX_COMMAND_TIMEOUT_MS (1 h, the bound of `task.json`'s
     * `commandTimeoutMs` too): past it the foreground job is killed, the shell stays.
     * @default the sandbox's commandTimeoutMs
     */
    timeoutMs: z.number().int().positive().max(MAX_COMMAND_TIMEOUT_MS).optional(),
    /** Stops the command like a timeout. */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();
export type ExecOptions = z.input<typeof execOptionsSchema>;
