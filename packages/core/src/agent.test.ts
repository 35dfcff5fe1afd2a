import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createReplayAgent, loadReplay, toTurnAgent, type MessageAgent } from './agent.js';
import { CoreError } from './errors.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("core's agents", () => {
  it('loadReplay still throws a CoreError INVALID_REPLAY naming the field (the app recognises it so)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-core-replay-'));
    dirs.push(dir);
    const file = path.join(dir, 'replay.json');
    fs.writeFileSync(file, '[{"role": "assistant", "content": 3}]');
    const error: unknown = await loadReplay(file).catch((e: unknown) => e);
    expect(CoreError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'INVALID_REPLAY', kind: 'bad_argument', field: 'replay[0].content' });
    const missing: unknown = await loadReplay(path.join(dir, 'nope.json')).catch((e: unknown) => e);
    expect(missing).toMatchObject({ name: 'CoreError', code: 'INVALID_REPLAY', field: '--replay' });
  });

  it('a MessageAgent becomes a turn agent: its message, a finish reason from its tool calls, its time', async () => {
    const legacy: MessageAgent = {
      name: 'legacy',
      next: (conversation, tools, options) =>
        Promise.resolve({
          role: 'assistant',
          content: `${conversation.length} ${tools.length} ${String(options.abortSignal?.aborted)}`,
        }),
    };
    const agent = toTurnAgent(legacy);
    const turn = await agent.turn({
      conversation: [{ role: 'user', content: 'x' }],
      tools: [],
      remaining: { turns: 1, timeMs: 1 },
      turnIndex: 0,
      abortSignal: new AbortController().signal,
    });
    expect(agent.name).toBe('legacy');
    expect(turn).toMatchObject({
      message: { content: '1 0 false' },
      finishReason: 'stop',
      timing: { retryWaitMs: 0 },
    });
    const replay = createReplayAgent([]);
    expect(toTurnAgent(replay)).toBe(replay);
  });
});
