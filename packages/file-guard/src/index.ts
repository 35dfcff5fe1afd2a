export { FileGuardError } from './errors.js';
export type { FileGuardErrorCode } from './errors.js';
export { reclaim } from './reclaim.js';
export type { ReclaimResult, ReclaimFailure } from './reclaim.js';
export { writeFileDurably, openDurableLog } from './durable.js';
export type { DurableLog } from './durable.js';
export {
  DEFAULT_CUSTODY_BUDGETS,
  reclaimOptionsSchema,
  writeDurablyOptionsSchema,
  durableLogOptionsSchema,
} from './options.js';
export type { ReclaimOptions, WriteDurablyOptions, DurableLogOptions } from './options.js';
export { takeCustody, linkStaysInside } from './custody.js';
export type { CustodyResult } from './custody.js';
export { custodyManifestSchema, custodyEntrySchema, custodySourceStatusSchema } from './manifest.js';
export type { CustodyManifest, CustodyEntry, CustodySourceStatus } from './manifest.js';
export { ARCHIVE_MIME_TYPES, detectType, policyViolation } from './file-types.js';
export type { DetectedType } from './file-types.js';
export { custodyOptionsSchema, custodySourceSchema, fileTypePolicySchema } from './options.js';
export type { CustodyOptions, CustodySource, FileTypePolicy } from './options.js';
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
export { UNTRUSTED_FAILURE_REASONS } from './helper.js';
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
