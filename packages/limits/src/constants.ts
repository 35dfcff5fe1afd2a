import { GiB, KiB } from '@karotte/base';

/**
 * Memory kept for the harness when the student's memory limit is derived from the host:
 * student memory = min(host RAM, every memory limit above the harness's cgroup) − this.
 * @default 1 GiB
 */
export const HARNESS_HEADROOM_BYTES = GiB;

/**
 * `oom_score_adj` of every process started through a launch prefix: the kernel's OOM killer
 * picks student processes first, and an unprivileged student cannot lower it.
 * @default 1000
 */
export const STUDENT_OOM_SCORE_ADJ = 1000;

/**
 * Wall-clock limit of a whole episode, for the packages that run episodes.
 * @default 3_600_000 (1 hour)
 */
export const DEFAULT_EPISODE_WALL_TIME_MS = 60 * 60_000;

/**
 * Timeout of one student command (one tool call) when the caller gives none.
 * @default 300_000 (5 minutes)
 */
export const DEFAULT_COMMAND_TIMEOUT_MS = 5 * 60_000;

/**
 * Largest per-command timeout a caller (or the student, through a tool argument) may ask for.
 * @default 3_600_000 (1 hour)
 */
export const MAX_COMMAND_TIMEOUT_MS = 60 * 60_000;

/**
 * How long `remove()` and `killAll()` wait for a group to empty before giving up.
 * @default 10_000
 */
export const DEFAULT_REMOVE_TIMEOUT_MS = 10_000;

/**
 * Poll interval of the memory watchdog (the tier for hosts without usable cgroups).
 * @default 100
 */
export const DEFAULT_WATCHDOG_POLL_MS = 100;

/**
 * Largest number of entries the watchdog counts in RAM-backed file systems for one uid before
 * it calls the reading unbounded (a violation): a flood of empty files must not make the walk
 * slower than its interval.
 * @default 10_000
 */
export const DEFAULT_WATCHDOG_ENTRY_BUDGET = 10_000;

/**
 * How often a quota checks whether it is full, so a fill that is deleted again is still reported.
 * 0 disables the background check (events() still checks when called).
 * @default 1000
 */
export const DEFAULT_QUOTA_POLL_MS = 1000;

/**
 * How often a group reads its limit-hit counters in the background (so `atMs` of an event is
 * close to when it happened). 0 disables it.
 * @default 1000
 */
export const DEFAULT_EVENT_POLL_MS = 1000;

/**
 * Default directory of per-resource owner records for cgroups (a tmpfs: cgroups do not
 * survive a reboot, and neither should their records).
 * @default '/run/karotte'
 */
export const DEFAULT_STATE_DIR = '/run/karotte';

/**
 * Default directory of quota images, their mount points and their owner records (on disk:
 * images survive a reboot, so their records must too).
 * @default '/var/lib/karotte'
 */
export const DEFAULT_IMAGE_DIR = '/var/lib/karotte';

/** Block size of quota images. */
export const QUOTA_BLOCK_BYTES = 4 * KiB;
