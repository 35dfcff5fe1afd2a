import fs from 'node:fs/promises';
import { z } from 'zod';
import { parseOptions, readJsonFile } from '@karotte/base';
import { CoreError } from './errors.js';
import { assistantMessageSchema, type AssistantMessage, type Message, type ToolSpec } from './messages.js';

/**
 * An agent: given the conversation so far and the tools, produce the next assistant message.
 * A message without tool calls ends the episode's step.
 */
export interface Agent {
  readonly name: string;
  next(
    conversation: readonly Message[],
    tools: readonly ToolSpec[],
    options: { readonly abortSignal?: AbortSignal },
  ): Promise<AssistantMessage>;
}

/** The replay file of the contract (section 5): a JSON array of assistant messages. */
export const replaySchema = z.array(assistantMessageSchema).max(100_000);

/** The largest replay file accepted, in bytes. */
export const MAX_REPLAY_FILE_BYTES = 64 * 1024 * 1024;

/**
 * The replay agent: returns the given messages in order, then an empty assistant message,
 * which ends the episode (the end of the array ends the episode, per the contract).
 */
export function createReplayAgent(messages: readonly AssistantMessage[]): Agent {
  const queue = [...parseOptions(replaySchema, messages, 'replay')];
  let index = 0;
  return {
    name: 'replay',
    next() {
      const message = queue[index];
      index += 1;
      return Promise.resolve(message ?? { role: 'assistant', content: null });
    },
  };
}

/** Read and validate a replay file. Invalid files are `INVALID_REPLAY` errors naming the field. */
export async function loadReplay(file: string): Promise<AssistantMessage[]> {
  // The replay is the operator's own file (never the student's): a symlink to it is followed,
  // as it always was; the target is then read as strictly as any input.
  let target = file;
  try {
    target = await fs.realpath(file);
  } catch {
    // missing or unreachable: readJsonFile says which
  }
  const read = await readJsonFile(target, {
    maxBytes: MAX_REPLAY_FILE_BYTES,
    schema: replaySchema,
    what: `replay file ${file}`,
  });
  if (read.ok) return read.value;
  let field = '--replay';
  if (read.refusal === 'invalid_shape') {
    field =
      read.field === undefined ? 'replay' : `replay${read.field.startsWith('[') ? '' : '.'}${read.field}`;
  }
  throw new CoreError('INVALID_REPLAY', read.message, { cause: read.cause, field });
}
