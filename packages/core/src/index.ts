export { CoreError } from './errors.js';
export type { CoreErrorCode, EpisodeErrorCode } from './errors.js';
export {
  taskFileSchema,
  taskLimitsSchema,
  taskStepSchema,
  graderSpecSchema,
  relativePathSchema,
  taskIdSchema,
  environmentSchema,
} from './task-schema.js';
export { taskJsonSchema } from './task-schema.js';
export type { TaskFile, TaskLimits, GraderSpec, TaskStepFile, TaskEnvironment } from './task-schema.js';
export { loadTask, MAX_TASK_FILE_BYTES } from './task.js';
export type { Task, TaskStep, LoadedEnvironment, LoadTaskOptions } from './task.js';
export { defineTask, taskDefinitionSchema } from './define-task.js';
export type { TaskDefinition } from './define-task.js';
export { toolCallSchema, assistantMessageSchema, renderObservation } from './messages.js';
export type {
  ToolCall,
  AssistantMessage,
  ContentPart,
  SystemMessage,
  UserMessage,
  ToolMessage,
  Message,
  ToolSpec,
  ToolObservation,
} from './messages.js';
export { createReplayAgent, loadReplay, replaySchema, MAX_REPLAY_FILE_BYTES } from './agent.js';
export type { Agent, MessageAgent, TurnAgent } from './agent.js';
export type {
  TurnRequest,
  TurnResponse,
  TurnBudgets,
  TurnUsage,
  TurnTokens,
  TurnTiming,
  FinishReason,
  RetryNotice,
  RetryKind,
} from '@karotte/agents';
export { Transcript, TRANSCRIPT_EVENT_TYPES, writeResultFile } from './transcript.js';
export type { TranscriptEvent, TranscriptEventType } from './transcript.js';
export {
  Episode,
  createEpisode,
  runEpisode,
  EPISODE_TOOLS,
  MAX_CONSECUTIVE_EMPTY_TURNS,
  EMPTY_TURN_NUDGE,
  MALFORMED_ARGUMENTS_PLACEHOLDER,
} from './episode.js';
export type {
  EpisodeOptions,
  EpisodeProgress,
  EpisodeResult,
  EpisodeError,
  StepOutcome,
  StepStopReason,
  TurnOutcome,
  WorldSpec,
  WorldFactory,
  JudgePreparer,
} from './episode.js';
export { bashProfile } from './tools/bash.js';
export type {
  ToolProfile,
  ToolCallRequest,
  ToolRunContext,
  ToolRunResult,
  ToolContentPart,
} from './tools/profile.js';
export type { StudentWorld, ShellOutcome } from './world.js';
export { createSandboxWorld, createSandboxWorldPool } from './sandbox-world.js';
export type { SandboxWorldOptions, SandboxWorldPool, SandboxWorldPoolOptions } from './sandbox-world.js';
export { checkHost } from './check.js';
export type { HostCheck, DefenseReport } from '@karotte/sandbox';
export { checkGraderInterpreter } from '@karotte/grader';
export type { GraderInterpreterCheck } from '@karotte/grader';
export { recoverLeftovers } from './recover.js';
export type { LeftoverReport } from './recover.js';
export { createToolProfile, TOOL_PROFILE_NAMES, toolProfileOptionsSchema } from './tools/index.js';
export type { ToolProfileName, ToolProfileOptions, StudentFiles } from './tools/index.js';
export {
  DEFAULT_IMAGE_CACHE_DIR,
  ImageError,
  buildDebianImage,
  importImage,
  listImages,
  pruneImages,
} from './images.js';
export type { CachedImage, ImportResult } from './images.js';
