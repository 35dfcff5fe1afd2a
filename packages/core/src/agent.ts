import fs from 'node:fs/promises';
import { z } from 'zod';
import { BadArgumentError, parseOptions } from '@karotte/base';
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
  let text: string;
  try {
    const stats = await fs.stat(file);
    if (!stats.isFile())
      throw new CoreError('INVALID_REPLAY', `${file} is not a regular file`, { field: '--replay' });
    if (stats.size > MAX_REPLAY_FILE_BYTES) {
      throw new CoreError('INVALID_REPLAY', `${file} is larger than ${MAX_REPLAY_FILE_BYTES} bytes`, {
        field: '--replay',
      });
    }
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if (error instanceof CoreError) throw error;
    throw new CoreError('INVALID_REPLAY', `cannot read replay file ${file}`, {
      cause: error,
      field: '--replay',
    });
  }
  let data: unknown;
  try {
    // eslint-disable-next-line no-restricted-syntax -- size-bounded above; validated by the schema next
    data = JSON.parse(text);
  } catch (error) {
    throw new CoreError('INVALID_REPLAY', `replay file is not valid JSON: ${(error as Error).message}`, {
      cause: error,
      field: '--replay',
    });
  }
  try {
    return parseOptions(replaySchema, data, 'replay file');
  } catch (error) {
    if (BadArgumentError.isInstance(error)) {
      throw new CoreError('INVALID_REPLAY', error.message, {
        cause: error,
        field: `replay${error.field?.startsWith('[') ? '' : '.'}${error.field ?? ''}`,
      });
    }
    throw error;
  }
}
