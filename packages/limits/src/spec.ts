// The student's limits: one schema for the whole path of an episode's limits. Core's task.json
// and defineTask take their fields from it, the sandbox's options are it (plus the sizes of the
// sandbox's own /tmp and /dev/shm), and this package's group, quota and rlimits check the same
// bounds. One bound and one default per limit, written here once, so a value one layer accepts
// is a value every layer below accepts: a task that validates cannot fail later on its limits.
import { GiB, KiB, MiB } from '@karotte/base';
import { z } from 'zod';

/**
 * Smallest memory limit: below this even a shell cannot start.
 * @default 16 MiB
 */
export const MIN_MEMORY_BYTES = 16 * MiB;

/**
 * Smallest process limit of a student. The sandbox's own processes share the student's group
 * (its PID 1, the shell and its output relays, the network check's probes): on this project's
 * host 12 still passed the quarterly-revenue control three times out of three and 8 made the
 * sandbox's setup fail, so 16 leaves room for a few commands.
 */
const MIN_PIDS = 16;

/** Largest process limit: the kernel's `PID_MAX_LIMIT` on 64-bit (no host can run more). */
export const MAX_PIDS = 4_194_304;

/**
 * Process (and thread) limit of one student: far above honest use, far below a fork bomb.
 * @default 512
 */
export const DEFAULT_PIDS = 512;

/**
 * CPU weight of one student (cgroup v2 `cpu.weight`, 1–10000; v1 `cpu.shares` = weight × 1024 / 100).
 * @default 100
 */
export const DEFAULT_CPU_WEIGHT = 100;

/**
 * Smallest disk quota (ext4 with 4 KiB blocks needs room for its metadata).
 * @default 8 MiB
 */
const MIN_DISK_BYTES = 8 * MiB;

/** Largest disk quota: 1 PiB (the image is preallocated, so the host's free space is the real bound). */
const MAX_DISK_BYTES = 2 ** 50;

/**
 * Size of a student's disk quota image, in bytes (the student can write a little less: ext4
 * metadata takes about 1.5% plus 256 bytes per inode).
 * @default 1 GiB
 */
export const DEFAULT_DISK_BYTES = GiB;

/**
 * Inodes (files, directories, links) of a disk quota of the default size, and the most a
 * derived inode count gives (see {@link defaultDiskInodes}).
 * @default 65536
 */
export const DEFAULT_DISK_INODES = 65_536;

/** Smallest inode count of a quota. */
const MIN_DISK_INODES = 64;

/**
 * RLIMIT_NOFILE (soft and hard) of every student process.
 * @default 1024
 */
export const DEFAULT_NOFILE = 1024;

/** Largest RLIMIT_NOFILE: the kernel's default `fs.nr_open`. */
export const MAX_NOFILE = 1_048_576;

/**
 * RLIMIT_MEMLOCK (soft and hard) of every student process: 64 KiB, the kernel's own default
 * for decades (raised to 8 MiB only in Linux 5.16), which honest programs live with (gpg and
 * ssh-agent lock a few pages). Memory locked this way is pinned outside what a v1 memory
 * cgroup counts, and perf ring buffers (`perf_event_open` + `mmap`) are bounded by it per
 * process beyond the uid's `perf_event_mlock_kb`: with the host's 8 MiB, 2048 processes of
 * one student pin 16 GiB; with 64 KiB, 128 MiB.
 * @default 65536 (64 KiB)
 */
export const DEFAULT_MEMLOCK_BYTES = 64 * KiB;

/**
 * The inode count of a quota of `diskBytes` when none is given: ext4's own ratio (one inode per
 * 16 KiB), at least 64 and at most {@link DEFAULT_DISK_INODES} (reached at the default 1 GiB).
 */
export function defaultDiskInodes(diskBytes: number): number {
  return Math.max(MIN_DISK_INODES, Math.min(DEFAULT_DISK_INODES, Math.floor(diskBytes / (16 * KiB))));
}

/** The bound of each limit, without a default: the group, quota and rlimits reuse them. */
export const limitRules = {
  memoryBytes: z.number().int().min(MIN_MEMORY_BYTES).max(Number.MAX_SAFE_INTEGER),
  pids: z.number().int().min(MIN_PIDS).max(MAX_PIDS),
  cpuWeight: z.number().int().min(1).max(10_000),
  diskBytes: z.number().int().min(MIN_DISK_BYTES).max(MAX_DISK_BYTES),
  diskInodes: z
    .number()
    .int()
    .min(MIN_DISK_INODES)
    .max(2 ** 32 - 1),
  nofile: z.number().int().min(16).max(MAX_NOFILE),
  fsizeBytes: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  memlockBytes: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
};

/**
 * The limits of one student, as the sandbox applies them. Sizes in bytes. Strict: a misspelled
 * limit is an error naming it. Core's `task.json` `limits` takes `memoryBytes`, `pids` and
 * `diskBytes` from here with these bounds (an omitted one gets the default below when the
 * sandbox applies it). The sizes of the sandbox's private `/tmp` and `/dev/shm` are not here:
 * they are mounts the sandbox makes (their pages count against `memoryBytes`), not limits this
 * package enforces.
 */
export const studentLimitsSchema = z
  .object({
    /**
     * Memory of the whole student: processes, page cache, tmpfs and `/dev/shm` files, SysV
     * shm. At least 16 MiB. Rounded down to the page size by the kernel.
     * @default defaultEpisodeMemoryBytes(): a share, (host RAM − HARNESS_HEADROOM_BYTES) / DEFAULT_MEMORY_SHARES (4), applied where the episode is admitted (the sandbox)
     */
    memoryBytes: limitRules.memoryBytes.optional(),
    /**
     * Most processes and threads at once, the sandbox's own included. 16 to 4194304.
     * @default DEFAULT_PIDS (512)
     */
    pids: limitRules.pids.default(DEFAULT_PIDS),
    /**
     * CPU weight, 1–10000. When given and the cpu controller is missing, creation fails; when
     * omitted, DEFAULT_CPU_WEIGHT (100) is applied where the controller exists.
     * @default DEFAULT_CPU_WEIGHT (100) where the cpu controller exists
     */
    cpuWeight: limitRules.cpuWeight.optional(),
    /**
     * Kernel-enforced disk quota of the working directory (a preallocated ext4 image). 8 MiB to
     * 1 PiB (the host must have the space: the image is never sparse).
     * @default DEFAULT_DISK_BYTES (1 GiB)
     */
    diskBytes: limitRules.diskBytes.default(DEFAULT_DISK_BYTES),
    /**
     * Files, directories and links the working directory can hold. At least 64.
     * @default one per 16 KiB of diskBytes, at most DEFAULT_DISK_INODES (65536)
     */
    diskInodes: limitRules.diskInodes.optional(),
    /**
     * RLIMIT_NOFILE of every student process. 16 to 1048576.
     * @default DEFAULT_NOFILE (1024)
     */
    nofile: limitRules.nofile.default(DEFAULT_NOFILE),
    /**
     * RLIMIT_FSIZE: the largest file one student process may write (SIGXFSZ past it).
     * @default unset
     */
    fsizeBytes: limitRules.fsizeBytes.optional(),
    /**
     * RLIMIT_MEMLOCK of every student process: locked memory and perf ring buffers, which
     * the kernel pins outside a v1 memory cgroup. 0 or more.
     * @default DEFAULT_MEMLOCK_BYTES (64 KiB)
     */
    memlockBytes: limitRules.memlockBytes.default(DEFAULT_MEMLOCK_BYTES),
  })
  .strict();

/** The limits of one student as a caller writes them (every field optional). */
export type StudentLimitOptions = z.input<typeof studentLimitsSchema>;
/** The limits of one student after defaults. */
export type StudentLimits = z.output<typeof studentLimitsSchema>;
