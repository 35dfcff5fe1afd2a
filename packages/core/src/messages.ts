// The chat-completions message types and schemas live in @karotte/agents (the agents speak
// them); core re-exports them and keeps what only an episode makes: tool observations.
import type { ShellOutcome } from './world.js';

export { toolCallSchema, assistantMessageSchema } from '@karotte/agents';
export type {
  ToolCall,
  AssistantMessage,
  ContentPart,
  SystemMessage,
  UserMessage,
  ToolMessage,
  Message,
  ToolSpec,
} from '@karotte/agents';

/**
 * The outcome of one tool call, as the agent will see it and the transcript records it: the
 * shell's outcome (`note`: the shell was restarted, arguments were malformed, …) with the call
 * it answers. A call that ran no command (a refusal, a file tool) has empty output and a null
 * exit code.
 */
export interface ToolObservation extends ShellOutcome {
  readonly toolCallId: string;
  readonly name: string;
  readonly ok: boolean;
}

/** Render an observation as the text of a `tool` message. */
export function renderObservation(observation: ShellOutcome): string {
  const parts: string[] = [];
  if (observation.note !== undefined) parts.push(`[note] ${observation.note}`);
  if (observation.stdout.length > 0) parts.push(observation.stdout);
  if (observation.stderr.length > 0) parts.push(`[stderr]\n${observation.stderr}`);
  if (observation.truncated) {
    parts.push(
      `[output truncated: ${observation.stdoutBytes} bytes stdout, ${observation.stderrBytes} bytes stderr]`,
    );
  }
  if (observation.timedOut) parts.push('[command timed out and was stopped; the shell goes on]');
  parts.push(`[exit code: ${observation.exitCode === null ? 'none' : observation.exitCode}]`);
  return parts.join('\n');
}
