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
