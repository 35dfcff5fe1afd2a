// `@karotte/agents/testing`: a real HTTP server on loopback that speaks the chat-completions
// API, scripted reply by reply, for tests of anything that drives a model (the agent, the
// episode loop, the CLI). It is real HTTP through the real SDK; only the model is scripted.
export { createScriptedModelServer, textReply, toolCallReply } from './scripted-server.js';
export type {
  ScriptedModelServer,
  ScriptedModelServerOptions,
  ScriptedReply,
  ScriptedCompletion,
  ScriptedError,
  ScriptedDrop,
  ScriptedRaw,
  ScriptedToolCall,
  RecordedRequest,
} from './scripted-server.js';
