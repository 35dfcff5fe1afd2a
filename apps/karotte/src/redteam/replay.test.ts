import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { AssistantMessage } from '@karotte/core';
import { ATTACKS } from './catalog.js';
import { attackReplay, seedReplay, shellQuote } from './replay.js';

describe('attack replays', () => {
  it('quotes submission paths as one shell word', () => {
    const out = execFileSync('/bin/bash', ['-c', `printf '%s|' ${shellQuote("a b'c$(x)")}`], {
      encoding: 'utf8',
    });
    expect(out).toBe("a b'c$(x)|");
  });

  it('builds one tool call per command and a final message', () => {
    const attack = ATTACKS.find((a) => a.id === 'fifo')!;
    const replay = attackReplay(attack, 'answer.txt');
    expect(replay).toHaveLength(attack.commands.length + 1);
    expect(replay[0]!.content).toBe(`Red-team attack fifo: ${attack.why}.`);
    expect(JSON.parse(replay[0]!.tool_calls![0]!.function.arguments)).toEqual({
      command: "rm -rf 'answer.txt'; mkfifo 'answer.txt'; ls -la 'answer.txt'",
    });
    expect(replay.at(-1)).toEqual({ role: 'assistant', content: 'Done.' });
  });

  it('passes an attack timeout to every call', () => {
    const attack = ATTACKS.find((a) => a.timeoutMs !== undefined && a.commands.length > 1)!;
    for (const message of attackReplay(attack, 'answer.txt').slice(0, -1)) {
      expect(JSON.parse(message.tool_calls![0]!.function.arguments)).toMatchObject({
        timeoutMs: attack.timeoutMs,
      });
    }
  });

  it("starts a seed episode with the control's tool calls, then the seed, with ids that never repeat", () => {
    const call = (id: string, command: string): AssistantMessage => ({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } },
      ],
    });
    const control: AssistantMessage[] = [
      call('call_0', 'head orders.csv'),
      call('call_1', 'echo 42 > answer.txt'),
      { role: 'assistant', content: 'The answer is in answer.txt.' },
    ];
    const replay = seedReplay(control, ['cp {{submission}} /tmp/x'], 'answer.txt');
    expect(replay.slice(0, 2)).toEqual(control.slice(0, 2));
    expect(replay).toHaveLength(4);
    expect(JSON.parse(replay[2]!.tool_calls![0]!.function.arguments)).toEqual({
      command: "cp 'answer.txt' /tmp/x",
    });
    const ids = replay.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []);
    expect(new Set(ids).size).toBe(ids.length);
    expect(replay.at(-1)).toEqual({ role: 'assistant', content: 'Done.' });
  });
});
