import type { AssistantMessage } from '@karotte/core';
import type { Attack } from './catalog.js';

/** Quote `value` for bash as one word. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** Substitute `{{submission}}` with the task's first submission path, shell-quoted. */
export function renderCommand(command: string, submission: string): string {
  return command.replaceAll('{{submission}}', shellQuote(submission));
}

/** The replay of an attack: one assistant message per command, then a final message. */
export function attackReplay(attack: Attack, submission: string): AssistantMessage[] {
  const messages: AssistantMessage[] = attack.commands.map((command, index) => ({
    role: 'assistant',
    content: index === 0 ? `Red-team attack ${attack.id}: ${attack.description}.` : null,
    tool_calls: [
      {
        id: `call_${index}`,
        type: 'function',
        function: {
          name: 'bash',
          arguments: JSON.stringify({
            command: renderCommand(command, submission),
            ...(attack.timeoutMs === undefined ? {} : { timeoutMs: attack.timeoutMs }),
          }),
        },
      },
    ],
  }));
  messages.push({ role: 'assistant', content: 'Done.' });
  return messages;
}
