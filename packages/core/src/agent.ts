import {
  AgentError,
  loadReplay as loadReplayFile,
  type Agent as TurnAgent,
  type TurnResponse,
} from '@karotte/agents';
import { CoreError } from './errors.js';
import type { AssistantMessage, Message, ToolSpec } from './messages.js';

export { createReplayAgent, replaySchema, MAX_REPLAY_FILE_BYTES } from '@karotte/agents';
export type { TurnAgent };

/**
 * An agent of the first interface: given the conversation so far and the tools, produce the
 * next assistant message. Still accepted everywhere an {@link Agent} is; a message without
 * tool calls ends the step.
 */
export interface MessageAgent {
  readonly name: string;
  next(
    conversation: readonly Message[],
    tools: readonly ToolSpec[],
    options: { readonly abortSignal?: AbortSignal },
  ): Promise<AssistantMessage>;
}

/**
 * What `runEpisode` drives: an agent of the turn interface of `@karotte/agents` (`turn(request)`
 * → message, finish reason, usage, tokens, timing: the replay agent, the OpenAI-compatible
 * agent), or a {@link MessageAgent}.
 */
export type Agent = TurnAgent | MessageAgent;

/** `agent` on the turn interface: a {@link MessageAgent}'s message becomes a turn. */
export function toTurnAgent(agent: Agent): TurnAgent {
  if ('turn' in agent && typeof agent.turn === 'function') return agent;
  const legacy = agent as MessageAgent;
  return {
    name: legacy.name,
    async turn(request): Promise<TurnResponse> {
      const started = performance.now();
      const message = await legacy.next(request.conversation, request.tools, {
        abortSignal: request.abortSignal,
      });
      return {
        message,
        finishReason: (message.tool_calls ?? []).length > 0 ? 'tool_calls' : 'stop',
        timing: { modelMs: Math.round(performance.now() - started), retryWaitMs: 0 },
      };
    },
  };
}

/**
 * Read and validate a replay file (contract section 5). Invalid files are `CoreError`
 * `INVALID_REPLAY` errors naming the field (`replay[0].tool_calls`, or `--replay` when the
 * file cannot be read).
 */
export async function loadReplay(file: string): Promise<AssistantMessage[]> {
  try {
    return await loadReplayFile(file);
  } catch (error) {
    // The agents package reads the file; core's callers recognise a CoreError, as before.
    if (AgentError.isInstance(error) && error.code === 'INVALID_REPLAY') {
      throw new CoreError('INVALID_REPLAY', error.message, {
        cause: error.cause,
        ...(error.field === undefined ? {} : { field: error.field }),
      });
    }
    throw error;
  }
}
