export { LimitsError } from './errors.js';
export type { LimitsErrorCode } from './errors.js';
export { studentLimitsSchema, DEFAULT_PIDS } from './spec.js';
export type { StudentLimitOptions, StudentLimits } from './spec.js';
export {
  DEFAULT_EPISODE_WALL_TIME_MS,
  DEFAULT_COMMAND_TIMEOUT_MS,
  MAX_COMMAND_TIMEOUT_MS,
} from './constants.js';
export { hostFaultOf, isHostFault, toMisbehavior } from './events.js';
export type { LimitContract, LimitName, LimitEvent, LimitEventKind } from './events.js';
export { cgroupHierarchySchema, detectCgroups } from './cgroup-detect.js';
export type { CgroupHierarchy, CgroupDetection } from './cgroup-detect.js';
export type { KillableGroup, FrozenHold, GroupKillOptions, GroupKillResult } from './group-types.js';
export { groupOptionsSchema, createGroup } from './group.js';
export type { GroupOptions, LimitGroup, GroupLimitReport, GroupUsage, GroupRemoval } from './group.js';
export { rlimitsSchema, launchPrefixOptionsSchema, createLaunchPrefix } from './launch.js';
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
export { recoverLimitLeftoversOptionsSchema, recoverLimitLeftovers } from './recover.js';
export type { RecoverLimitLeftoversOptions, LimitRecoveryReport, ReclaimedResource } from './recover.js';
export { admissionOptionsSchema, admit, hostCapacity, defaultEpisodeMemoryBytes } from './admission.js';
export type { Admission, AdmissionOptions, HostCapacity } from './admission.js';
