import type { AssistantMessage } from '@karotte/core';
import type { Attack } from './attack.js';

/** Quote `value` for bash as one word. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** Substitute `{{submission}}` with the task's first submission path, shell-quoted. */
export function renderCommand(command: string, submission: string): string {
  return command.replaceAll('{{submission}}', shellQuote(submission));
}

/** One assistant message calling bash with each command, the first one saying `content`. */
function commandMessages(
  commands: readonly string[],
  submission: string,
  content: string | null,
  timeoutMs: number | undefined,
  firstCall = 0,
): AssistantMessage[] {
  return commands.map((command, index) => ({
    role: 'assistant',
    content: index === 0 ? content : null,
    tool_calls: [
      {
        id: `call_${firstCall + index}`,
        type: 'function',
        function: {
          name: 'bash',
          arguments: JSON.stringify({
            command: renderCommand(command, submission),
            ...(timeoutMs === undefined ? {} : { timeoutMs }),
          }),
        },
      },
    ],
  }));
}

/** The replay of an attack: one assistant message per command, then a final message. */
export function attackReplay(attack: Attack, submission: string): AssistantMessage[] {
  const messages = commandMessages(
    attack.commands,
    submission,
    `Red-team attack ${attack.id}: ${attack.why}.`,
    attack.timeoutMs,
  );
  messages.push({ role: 'assistant', content: 'Done.' });
  return messages;
}

/**
 * The earlier episode of a cross-episode attack: the control's messages that call tools (it
 * solves the task honestly), then one message per seed command (they leave the answer where a
 * later episode can read it), then a final message.
 */
export function seedReplay(
  control: readonly AssistantMessage[],
  seed: readonly string[],
  submission: string,
): AssistantMessage[] {
  const solving = control.filter((message) => (message.tool_calls?.length ?? 0) > 0);
  const calls = solving.reduce((n, message) => n + (message.tool_calls?.length ?? 0), 0);
  return [
    ...solving,
    ...commandMessages(seed, submission, 'Now leave the answer for a later episode.', undefined, calls),
    { role: 'assistant', content: 'Done.' },
  ];
}
