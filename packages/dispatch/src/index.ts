export { DispatchError } from './errors.js';
export type { DispatchErrorCode } from './errors.js';
export {
  MAX_PAYLOAD_BYTES,
  MAX_RESULT_BYTES,
  PAYLOAD_SCHEMA_VERSION,
  episodeIdSchema,
  endpointNameSchema,
  episodeResultSchema,
  jobAgentSchema,
  jobPayloadSchema,
  jobResultSchema,
  parseJobResult,
  parsePayload,
  runIdSchema,
  taskDigestSchema,
} from './schema.js';
export type { EpisodeResultJson, JobPayload, JobResult } from './schema.js';
export { parseRedisUrl, redisTargetSchema } from './redis.js';
export type { RedisTarget } from './redis.js';
export { TaskStore, taskDigest } from './tasks.js';
export type { StoredTask } from './tasks.js';
export { Metrics } from './metrics.js';
export {
  autoConcurrency,
  createWorker,
  endpointSchema,
  prefixSchema,
  queueNameSchema,
  workerOptionsSchema,
} from './worker.js';
export type { DispatchWorker, Endpoint, WorkerEvent, WorkerOptions } from './worker.js';
export { clientOptionsSchema, createDispatchClient, submitOptionsSchema } from './client.js';
export type { ClientOptions, DispatchClient, EpisodeReport, RunProgress, SubmitOptions } from './client.js';
