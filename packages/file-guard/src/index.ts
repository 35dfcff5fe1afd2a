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
