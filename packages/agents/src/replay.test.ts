import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BadArgumentError } from '@karotte/base';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentError } from './errors.js';
import { createReplayAgent, loadReplay } from './replay.js';
import type { TurnRequest } from './turn.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const request: TurnRequest = {
  conversation: [],
  tools: [],
  remaining: { turns: 1, timeMs: 1000 },
  turnIndex: 0,
  abortSignal: new AbortController().signal,
};

describe('the replay agent', () => {
  it('answers with the messages in order, then an empty message (which ends the step)', async () => {
    const agent = createReplayAgent([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
        ],
      },
      { role: 'assistant', content: 'Done.' },
    ]);
    expect(agent.name).toBe('replay');
    const first = await agent.turn(request);
    expect(first).toMatchObject({ finishReason: 'tool_calls', timing: { modelMs: 0, retryWaitMs: 0 } });
    expect(first.message.tool_calls).toHaveLength(1);
    expect(first.usage).toBeUndefined();
    expect(await agent.turn(request)).toMatchObject({ message: { content: 'Done.' }, finishReason: 'stop' });
    expect(await agent.turn(request)).toMatchObject({
      message: { role: 'assistant', content: null },
      finishReason: 'stop',
    });
  });

  it('refuses messages that are not the contract shape, naming the field', () => {
    expect(() => createReplayAgent([{ role: 'assistant', contnet: 'x' } as never])).toThrow(BadArgumentError);
  });
});

describe('loadReplay', () => {
  function file(text: string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-agents-replay-'));
    dirs.push(dir);
    const out = path.join(dir, 'replay.json');
    fs.writeFileSync(out, text);
    return out;
  }

  it('reads a replay file, following a symlink to it', async () => {
    const target = file('[{"role": "assistant", "content": "hi"}]');
    const link = `${target}.link`;
    fs.symlinkSync(target, link);
    expect(await loadReplay(link)).toEqual([{ role: 'assistant', content: 'hi' }]);
  });

  it('an invalid file is INVALID_REPLAY naming the field, or --replay when it cannot be read', async () => {
    const bad: unknown = await loadReplay(file('[{"role": "assistant", "tool_calls": [{"id": "x"}]}]')).catch(
      (e: unknown) => e,
    );
    expect(AgentError.isInstance(bad)).toBe(true);
    expect(bad).toMatchObject({ code: 'INVALID_REPLAY', kind: 'bad_argument' });
    expect((bad as AgentError).field).toMatch(/^replay\[0\]\.tool_calls/);
    const missing: unknown = await loadReplay('/nonexistent/karotte-replay.json').catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: 'INVALID_REPLAY', field: '--replay' });
  });
});
