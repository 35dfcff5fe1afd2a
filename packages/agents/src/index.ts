export { AgentError } from './errors.js';
export type { AgentErrorCode, AgentErrorOptions } from './errors.js';
export { toolCallSchema, assistantMessageSchema } from './messages.js';
export type {
  ToolCall,
  AssistantMessage,
  ContentPart,
  SystemMessage,
  UserMessage,
  ToolMessage,
  Message,
  ToolSpec,
} from './messages.js';
export type {
  Agent,
  TurnRequest,
  TurnResponse,
  TurnBudgets,
  TurnUsage,
  TurnTokens,
  TurnTiming,
  FinishReason,
  RetryNotice,
  RetryKind,
} from './turn.js';
export { createReplayAgent, loadReplay, replaySchema, MAX_REPLAY_FILE_BYTES } from './replay.js';
export { createOpenAIAgent, openAIAgentOptionsSchema, samplingSchema } from './openai.js';
export type { OpenAIAgentOptions } from './openai.js';
export { retryPolicySchema } from './retry.js';
export type { RetryPolicy, RetryPolicyOptions } from './retry.js';
export { readApiKey } from './api-key.js';
export type { ApiKeySource } from './api-key.js';
