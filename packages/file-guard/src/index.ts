// @karotte/file-guard: custody of submissions, safe reads of untrusted files, reclaim of a
// uid's files, durable writes. Explicit named exports only.

// Custody
export { takeCustody, linkStaysInside } from './custody.js';
export type { CustodyResult } from './custody.js';
export { custodyOptionsSchema, custodySourceSchema, fileTypePolicySchema } from './options.js';
export type { CustodyOptions, CustodySource, FileTypePolicy } from './options.js';
export { custodyManifestSchema } from './manifest.js';
export type { CustodyManifest, CustodyEntry, CustodySourceStatus } from './manifest.js';
export { detectType } from './file-types.js';
export type { DetectedType } from './file-types.js';

// Untrusted-path operations (in process or as another uid)
export { readUntrusted, writeUntrusted, statUntrusted, listUntrusted } from './untrusted.js';
export type {
  UntrustedFailure,
  ReadUntrustedSuccess,
  ReadUntrustedResult,
  WriteUntrustedSuccess,
  WriteUntrustedResult,
  UntrustedStat,
  UntrustedEntry,
  StatUntrustedResult,
  ListUntrustedResult,
} from './untrusted.js';
export type { UntrustedFailureReason } from './helper.js';
export type { EntryType } from './fd-path.js';
export {
  readUntrustedOptionsSchema,
  writeUntrustedOptionsSchema,
  listUntrustedOptionsSchema,
  statUntrustedOptionsSchema,
} from './options.js';
export type {
  ReadUntrustedOptions,
  WriteUntrustedOptions,
  ListUntrustedOptions,
  StatUntrustedOptions,
} from './options.js';

// Reclaim
export { reclaim } from './reclaim.js';
export type { ReclaimResult, ReclaimFailure } from './reclaim.js';
export { reclaimOptionsSchema } from './options.js';
export type { ReclaimOptions } from './options.js';

// Durable writes
export { writeFileDurably, openDurableLog } from './durable.js';
export type { DurableLog } from './durable.js';
export { writeDurablyOptionsSchema, durableLogOptionsSchema } from './options.js';
export type { WriteDurablyOptions, DurableLogOptions } from './options.js';

// Errors
export { FileGuardError } from './errors.js';
export type { FileGuardErrorCode } from './errors.js';
