export { DispatchError, isDispatchError } from './errors.js';
export type { DispatchErrorCode } from './errors.js';
export { runDispatch, dispatchOptionsSchema } from './dispatch.js';
export type { DispatchOptions, DispatchResult } from './dispatch.js';
