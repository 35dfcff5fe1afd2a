export { ServerError } from './errors.js';
export type { ServerErrorCode } from './errors.js';
export { createEnvironmentServer, environmentServerOptionsSchema, isLoopbackHost } from './server.js';
export type { EnvironmentServer, EnvironmentServerOptions, ListenTarget } from './server.js';
export { openApiDocument } from './openapi.js';
export {
  PROTOCOL_VERSION,
  MAX_GROUP_SIZE,
  DEFAULT_MAX_BODY_BYTES,
  createEpisodeRequestSchema,
  createGroupRequestSchema,
  turnRequestSchema,
  turnMessageSchema,
  finishRequestSchema,
  runRequestSchema,
  episodeCreatedSchema,
  groupCreatedSchema,
  turnAnswerSchema,
  episodeResultSchema,
  rolloutSchema,
  eventSchema,
  errorBodySchema,
  tasksResponseSchema,
  capabilitiesSchema,
} from './schemas.js';
export type {
  CreateEpisodeRequest,
  CreateGroupRequest,
  TurnRequestBody,
  TurnAnswer,
  ServedResult,
  RunRequestBody,
} from './schemas.js';
export { worldFingerprint } from './fingerprint.js';
export { OPENENV_ERROR_CODES, openEnvResetDataSchema, parseOpenEnvFrame } from './openenv-protocol.js';
export type {
  OpenEnvErrorCode,
  OpenEnvErrorData,
  OpenEnvRequest,
  OpenEnvResetData,
  ParsedFrame,
} from './openenv-protocol.js';
export { MCP_CALL_ID_META, MAX_MCP_SESSIONS_PER_EPISODE } from './mcp.js';
export type { McpTransport } from './mcp.js';
export { MAX_EVENTS_PER_EPISODE } from './session.js';
export type { ServedEvent } from './session.js';
export {
  createEnvironmentClient,
  environmentClientOptionsSchema,
  EnvironmentRequestError,
} from './client.js';
export type { EnvironmentClient, EnvironmentClientOptions, CreatedEpisode, StreamedEvent } from './client.js';
