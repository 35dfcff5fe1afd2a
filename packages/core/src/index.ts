export { CoreError } from './errors.js';
export type { CoreErrorCode } from './errors.js';
export {
  taskFileSchema,
  taskLimitsSchema,
  taskStepSchema,
  graderSpecSchema,
  relativePathSchema,
  taskIdSchema,
} from './task-schema.js';
export type { TaskFile, TaskLimits, GraderSpec, TaskStepFile } from './task-schema.js';
export { loadTask, MAX_TASK_FILE_BYTES } from './task.js';
export type { Task, TaskStep } from './task.js';
