import { z } from 'zod';

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

/**
 * An assistant message in the chat-completions shape, as the replay file of the contract
 * (section 5) holds it: strict, so a misspelled key is an error, not a silent no-op.
 */
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

/**
 * An assistant message. A model's may also carry its reasoning (`reasoning_content`, as vLLM,
 * SGLang and DeepSeek return it): recorded in the transcript, never counted as text.
 */
export type AssistantMessage = z.infer<typeof assistantMessageSchema> & {
  readonly reasoning_content?: string | null;
};

/** One part of a message's content: text, or an image (a file the student viewed). */
export type ContentPart =
  | { readonly type: 'text'; readonly text: string }
  | {
      readonly type: 'image';
      readonly mediaType: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';
      readonly dataBase64: string;
    };

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
  /** Text, or parts when the result holds an image or several parts. */
  readonly content: string | readonly ContentPart[];
}
/** A message of the conversation an agent sees. */
export type Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** A tool the agent may call, described for the model (JSON Schema parameters). */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}
