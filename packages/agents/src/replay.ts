import fs from 'node:fs/promises';
import { z } from 'zod';
import { parseOptions, readJsonFile } from '@karotte/base';
import { AgentError } from './errors.js';
import { assistantMessageSchema, type AssistantMessage } from './messages.js';
import type { Agent, TurnResponse } from './turn.js';

/** The replay file of the contract (section 5): a JSON array of assistant messages. */
export const replaySchema = z.array(assistantMessageSchema).max(100_000);

/** The largest replay file accepted, in bytes. */
export const MAX_REPLAY_FILE_BYTES = 64 * 1024 * 1024;

/**
 * The replay agent: answers each turn with the next of the given messages, then with an empty
 * assistant message, which ends the step (the end of the array ends the episode, per the
 * contract). Its turns take no model time and report no usage.
 *
 * @throws BadArgumentError when `messages` is not the replay shape, naming the field.
 */
export function createReplayAgent(messages: readonly AssistantMessage[]): Agent {
  const queue = [...parseOptions(replaySchema, messages, 'replay')];
  let index = 0;
  return {
    name: 'replay',
    turn(): Promise<TurnResponse> {
      const message: AssistantMessage = queue[index] ?? { role: 'assistant', content: null };
      index += 1;
      return Promise.resolve({
        message,
        finishReason: (message.tool_calls ?? []).length > 0 ? 'tool_calls' : 'stop',
        timing: { modelMs: 0, retryWaitMs: 0 },
        attempts: 1,
      });
    },
  };
}

/**
 * Read and validate a replay file. Invalid files are `INVALID_REPLAY` errors naming the field
 * (`replay[0].tool_calls`, or `--replay` when the file cannot be read at all).
 */
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
  throw new AgentError('INVALID_REPLAY', read.message, { cause: read.cause, field });
}
