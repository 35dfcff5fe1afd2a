export type { KillableGroup, GroupKillResult } from './group-types.js';
export { LimitsError } from './errors.js';
export { V1_TCP_MEMORY_SHARE } from './cgroup-backend.js';
export type { LimitsErrorCode, LimitsErrorDetails } from './errors.js';
export { studentLimitsSchema } from './spec.js';
export type { StudentLimitOptions, StudentLimits } from './spec.js';
export {
  DEFAULT_PIDS,
  DEFAULT_CPU_WEIGHT,
  DEFAULT_NOFILE,
  DEFAULT_MEMLOCK_BYTES,
  DEFAULT_DISK_BYTES,
  DEFAULT_DISK_INODES,
  MIN_DISK_BYTES,
  MIN_MEMORY_BYTES,
} from './spec.js';
export {
  HARNESS_HEADROOM_BYTES,
  STUDENT_OOM_SCORE_ADJ,
  DEFAULT_EPISODE_WALL_TIME_MS,
  DEFAULT_COMMAND_TIMEOUT_MS,
  MAX_COMMAND_TIMEOUT_MS,
  DEFAULT_REMOVE_TIMEOUT_MS,
  DEFAULT_WATCHDOG_POLL_MS,
  DEFAULT_WATCHDOG_ENTRY_BUDGET,
  DEFAULT_QUOTA_POLL_MS,
  DEFAULT_EVENT_POLL_MS,
  DEFAULT_STATE_DIR,
  DEFAULT_IMAGE_DIR,
} from './constants.js';
export { CONTRACTS, LIMIT_NAMES, hostFaultOf, isHostFault, toMisbehavior } from './events.js';
export type { Contract, LimitName, LimitEvent, LimitEventKind } from './events.js';
export { cgroupHierarchySchema, detectCgroups } from './cgroup-detect.js';
export type { CgroupHierarchy, CgroupDetection } from './cgroup-detect.js';
export { groupOptionsSchema, createGroup, GROUP_NAME_PATTERN } from './group.js';
export type { GroupOptions, LimitGroup, GroupLimitReport, GroupUsage, GroupRemoval } from './group.js';
export { rlimitsSchema, launchPrefixOptionsSchema, createLaunchPrefix, LAUNCH_SCRIPT } from './launch.js';
export type { RlimitOptions, Rlimits, LaunchPrefixOptions } from './launch.js';
export {
  quotaOptionsSchema,
  quotaAcquireOptionsSchema,
  quotaPoolOptionsSchema,
  createQuota,
  createQuotaPool,
} from './quota.js';
export type {
  QuotaOptions,
  QuotaAcquireOptions,
  QuotaPoolOptions,
  Quota,
  QuotaPool,
  QuotaUsage,
  QuotaRemoval,
} from './quota.js';
export { episodeLimitsOptionsSchema, createEpisodeLimits } from './episode.js';
export type { EpisodeLimitsOptions, EpisodeLimits } from './episode.js';
export { watchdogOptionsSchema, createWatchdog } from './watchdog.js';
export type { WatchdogOptions, Watchdog, WatchdogReading, WatchdogViolation } from './watchdog.js';
export { probeOptionsSchema, probe } from './probe.js';
export type { ProbeOptions, ProbeResult, ProbedLimit } from './probe.js';
export { recoverOptionsSchema, recoverLeftovers } from './recover.js';
export type { RecoverOptions, RecoveryReport, ReclaimedResource } from './recover.js';
export {
  admit,
  admissionOptionsSchema,
  hostCapacity,
  defaultEpisodeMemoryBytes,
  DEFAULT_ADMISSION_DIR,
  DEFAULT_MEMORY_SHARES,
  FILE_TABLE_SHARE,
} from './admission.js';
export type { Admission, AdmissionOptions, HostCapacity } from './admission.js';
