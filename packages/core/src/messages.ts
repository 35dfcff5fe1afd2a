import { z } from 'zod';
import type { ShellOutcome } from './world.js';

/** A tool call in the chat-completions shape; `arguments` is a JSON string, as models send it. */
export const toolCallSchema = z
  .object({
    id: z.string().min(1).max(256),
    type: z.literal('function'),
    function: z
      .object({
        name: z.string().min(1).max(256),
        arguments: z.string().max(1024 * 1024),
      })
      .strict(),
  })
  .strict();

/** An assistant message in the chat-completions shape (the replay agent's input). */
export const assistantMessageSchema = z
  .object({
    role: z.literal('assistant'),
    content: z
      .string()
      .max(1024 * 1024)
      .nullable()
      .optional(),
    tool_calls: z.array(toolCallSchema).max(256).optional(),
  })
  .strict();

export type ToolCall = z.infer<typeof toolCallSchema>;
export type AssistantMessage = z.infer<typeof assistantMessageSchema>;

export interface SystemMessage {
  readonly role: 'system';
  readonly content: string;
}
export interface UserMessage {
  readonly role: 'user';
  readonly content: string;
}
export interface ToolMessage {
  readonly role: 'tool';
  readonly tool_call_id: string;
  readonly content: string;
}
/** A message of the conversation an agent sees. */
export type Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** A tool the agent may call, described for the model (JSON Schema parameters). */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

/**
 * The outcome of one tool call, as the agent will see it and the transcript records it: the
 * shell's outcome (`note`: the shell was restarted, arguments were malformed, …) with the call
 * it answers.
 */
export interface ToolObservation extends ShellOutcome {
  readonly toolCallId: string;
  readonly name: string;
  readonly ok: boolean;
}

/** Render an observation as the text of a `tool` message. */
export function renderObservation(observation: ToolObservation): string {
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
