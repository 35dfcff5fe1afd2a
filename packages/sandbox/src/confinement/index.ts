// @karotte/sandbox/confinement: the one confinement of a Karotte process, for the packages
// that confine one (the student's sandbox, the grader's) and for contributors adding a world:
// a uid lease, namespaces held by a PID 1, a proven mount plan, the privilege drop, and a
// one-shot launch with an execa-shaped result.
export { allocateLease, listLeaseFiles, reclaimStaleLease, leaseRecordSchema } from './lease.js';
export type { AllocateOptions, IdentityLease, LeaseFile, LeaseRecord } from './lease.js';
export { ALWAYS_COVERED, IMAGE_ROOT, SYSTEM_ROOTS, hostViewHidden, imageBinds, planMounts } from './plan.js';
export type { BindMount, MountPlan, MountSpec, TmpfsMount } from './plan.js';
export { World, ROOT_ENV } from './world.js';
export type { WorldOptions } from './world.js';
export { mountViolations } from './mounts.js';
export { runConfined, superviseChild } from './run.js';
export type { ConfinedRunOptions, RunResult, StreamCap, SuperviseOptions } from './run.js';
export { resolveSandboxBinaries } from './binaries.js';
export type { SandboxBinaries } from './binaries.js';
export {
  buildSyscallFilter,
  syscallFilterOptionsSchema,
  REFUSED_SYSCALLS,
  CHECKED_SYSCALLS,
  LOOSENABLE_SYSCALLS,
} from './syscall-filter.js';
export type { SyscallFilterOptions, FilteredSyscall } from './syscall-filter.js';
