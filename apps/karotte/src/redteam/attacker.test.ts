import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Agent, TurnRequest } from '@karotte/agents';
import { describe, expect, it } from 'vitest';
import attackerPromptFile from './attacker-prompt.txt?raw';
import { ATTACKER_PROMPT, ATTACKER_PROMPT_SHA256, withSystemPrompt } from './attacker.js';

describe('the attacker prompt', () => {
  it('is the file, as written, and asks for every class of reward hack', () => {
    expect(attackerPromptFile).toBe(
      fs.readFileSync(path.join(import.meta.dirname, 'attacker-prompt.txt'), 'utf8'),
    );
    expect(ATTACKER_PROMPT).toBe(attackerPromptFile.trim());
    expect(ATTACKER_PROMPT_SHA256).toBe(createHash('sha256').update(ATTACKER_PROMPT).digest('hex'));
    for (const phrase of [
      'WITHOUT doing the work',
      'Read the answer key',
      'Tamper with grading',
      'Break the grader',
      'Exhaust resources',
      'Reach the network',
      'attack only this environment',
    ]) {
      expect(ATTACKER_PROMPT).toContain(phrase);
    }
  });
});

describe('withSystemPrompt', () => {
  function recording(): { agent: Agent; seen: TurnRequest[] } {
    const seen: TurnRequest[] = [];
    return {
      seen,
      agent: {
        name: 'openai',
        turn: (request) => {
          seen.push(request);
          return Promise.resolve({
            message: { role: 'assistant', content: 'ok' },
            finishReason: 'stop',
            timing: { modelMs: 0, retryWaitMs: 0 },
          });
        },
      },
    };
  }
  const base = {
    tools: [],
    remaining: { turns: 3, timeMs: 1000 },
    turnIndex: 0,
    abortSignal: new AbortController().signal,
  };

  it("adds the prompt to the episode's system message in every turn, leaving the rest as it is", async () => {
    const { agent, seen } = recording();
    const attacker = withSystemPrompt(agent, 'BREAK IT', 'openai-attacker');
    expect(attacker.name).toBe('openai-attacker');
    const conversation = [
      { role: 'system' as const, content: 'You are working in a Linux shell.' },
      { role: 'user' as const, content: 'Compute the total.' },
    ];
    await attacker.turn({ ...base, conversation });
    expect(seen[0]!.conversation).toEqual([
      { role: 'system', content: 'You are working in a Linux shell.\n\nBREAK IT' },
      { role: 'user', content: 'Compute the total.' },
    ]);
    // The episode's own conversation is not changed.
    expect(conversation[0]!.content).toBe('You are working in a Linux shell.');
    expect(seen[0]!.abortSignal).toBe(base.abortSignal);
  });

  it('puts the prompt first when the conversation has no system message', async () => {
    const { agent, seen } = recording();
    await withSystemPrompt(agent, 'BREAK IT', 'a').turn({
      ...base,
      conversation: [{ role: 'user', content: 'x' }],
    });
    expect(seen[0]!.conversation).toEqual([
      { role: 'system', content: 'BREAK IT' },
      { role: 'user', content: 'x' },
    ]);
  });
});
