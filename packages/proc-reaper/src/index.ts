export { reap, reapTargetSchema, reapOptionsSchema } from './reap.js';
export type { ReapTarget, ReapOptions } from './reap.js';
export {
  reapBestEffort,
  bestEffortTargetSchema,
  bestEffortOptionsSchema,
  BEST_EFFORT_MISSES,
} from './best-effort.js';
export type { BestEffortTarget, BestEffortOptions } from './best-effort.js';
export {
  reapRecordSchema,
  confirmedReapRecordSchema,
  bestEffortReapRecordSchema,
  recordedProcessSchema,
} from './record.js';
export type { ReapRecord, ConfirmedReapRecord, BestEffortReapRecord, RecordedProcess } from './record.js';
export { reclaimLeftovers, reclaimLeftoversOptionsSchema, reclaimRecordSchema } from './reclaim.js';
export type { ReclaimLeftoversOptions, ReclaimRecord } from './reclaim.js';
export { ProcReaperError } from './errors.js';
export type { ProcReaperErrorCode } from './errors.js';
