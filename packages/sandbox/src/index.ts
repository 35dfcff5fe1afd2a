export { createSandbox, reclaimStaleSandboxes, listLeases, readinessProblems } from './sandbox.js';
export { createSandboxPool, sandboxPoolOptionsSchema } from './pool.js';
export type { SandboxPool, SandboxPoolOptions, SandboxPoolStats } from './pool.js';
export type { Sandbox, AppliedLimits, SandboxHandle, TeardownReport, RestartReport } from './sandbox.js';
export {
  sandboxOptionsSchema,
  sandboxLimitsSchema,
  networkOptionsSchema,
  allowedEndpointSchema,
  execOptionsSchema,
  DEFAULT_FIRST_UID,
  DEFAULT_UID_COUNT,
  DEFAULT_SANDBOX_STATE_DIR,
} from './options.js';
export type { SandboxOptions, ParsedSandboxOptions, ExecOptions } from './options.js';
export type { ExecResult } from './shell.js';
export {
  viewOptionsSchema,
  writeOptionsSchema,
  replaceOptionsSchema,
  listOptionsSchema,
} from './file-tools.js';
export type {
  SandboxFiles,
  FileToolFailure,
  ViewOptions,
  ViewResult,
  WriteOptions,
  WriteResult,
  ReplaceOptions,
  ReplaceResult,
  ListOptions,
  ListResult,
} from './file-tools.js';
export { networkVerdictSchema, networkProbeSchema, FORBIDDEN_TARGETS } from './network.js';
export type { NetworkVerdict, NetworkProbe, NetworkTarget } from './network.js';
export { SandboxError } from './errors.js';
export type { SandboxErrorCode } from './errors.js';
export {
  sanitizeEnvironment,
  isSafePathEntry,
  sanitizePathList,
  DEFAULT_PASS_ENV,
  DEFAULT_STUDENT_PATH,
} from './env.js';
export type { EnvRemoval } from './env.js';
export type { LeaseFile } from './confinement/lease.js';
export { checkHost, checkHostOptionsSchema, DEFENSE_NAMES } from './check.js';
export type { HostCheck, DefenseReport, DefenseContract, CheckHostOptions } from './check.js';
