import { describe, expect, it } from 'vitest';
import { InvalidCompletion, StreamAccumulator, parseCompletion, toWireMessages } from './completion.js';

describe('parseCompletion', () => {
  it('refuses what is not a completion', () => {
    expect(parseCompletion(null, 0)).toBeInstanceOf(InvalidCompletion);
    expect(parseCompletion({ choices: [] }, 0)).toBeInstanceOf(InvalidCompletion);
    expect(parseCompletion({ choices: 'x' }, 0)).toBeInstanceOf(InvalidCompletion);
  });

  it('gives calls without an id one, takes object arguments as their JSON, and reads `reasoning`', () => {
    const parsed = parseCompletion(
      {
        choices: [
          {
            message: {
              content: [
                { type: 'text', text: 'a' },
                { type: 'text', text: 'b' },
              ],
              reasoning: 'hmm',
              tool_calls: [
                { function: { name: 'bash', arguments: { command: 'ls' } } },
                { id: '', type: 'function', function: { name: 'x' } },
                'garbage',
              ],
            },
            finish_reason: null,
          },
        ],
      },
      7,
    );
    expect(parsed).toEqual({
      message: {
        role: 'assistant',
        content: 'ab',
        reasoning_content: 'hmm',
        tool_calls: [
          {
            id: 'call_karotte_7_0',
            type: 'function',
            function: { name: 'bash', arguments: '{"command":"ls"}' },
          },
          { id: 'call_karotte_7_1', type: 'function', function: { name: 'x', arguments: '' } },
        ],
      },
      finishReason: 'tool_calls',
      providerFinishReason: null,
    });
  });

  it('reads token ids from `token_id:<n>` logprob tokens when token_ids is missing, and drops bad usage', () => {
    const parsed = parseCompletion(
      {
        usage: { prompt_tokens: -1, completion_tokens: 3 },
        choices: [
          {
            message: { content: 'hi' },
            finish_reason: 'stop',
            logprobs: {
              content: [
                { token: 'token_id:5', logprob: -0.1 },
                { token: 'token_id:6', logprob: -0.2 },
              ],
            },
          },
        ],
      },
      0,
    );
    expect(parsed).toMatchObject({ tokens: { completionIds: [5, 6], logprobs: [-0.1, -0.2] } });
    expect(parsed).not.toHaveProperty('usage');
    const noIds = parseCompletion(
      { choices: [{ message: { content: 'hi' }, logprobs: { content: [{ token: 'hi', logprob: -1 }] } }] },
      0,
    );
    expect(noIds).not.toHaveProperty('tokens');
    const badIds = parseCompletion({ choices: [{ message: {}, token_ids: [1, -2] }] }, 0);
    expect(badIds).not.toHaveProperty('tokens');
  });
});

describe('parseCompletion: tool call ids', () => {
  it('gives a repeated id its own, so every tool result names one call', () => {
    const call = (id: string) => ({ id, type: 'function', function: { name: 'bash', arguments: '{}' } });
    const parsed = parseCompletion(
      { choices: [{ message: { tool_calls: [call('a'), call('a'), call('b')] } }] },
      3,
    );
    expect(parsed instanceof InvalidCompletion ? [] : parsed.message.tool_calls?.map((c) => c.id)).toEqual([
      'a',
      'call_karotte_3_1',
      'b',
    ]);
  });
});

describe('StreamAccumulator', () => {
  it('joins deltas, assembles tool calls by index, keeps usage, token ids and the finish reason', () => {
    const acc = new StreamAccumulator();
    const chunk = (choice: object, extra: object = {}) => ({
      model: 'm',
      choices: [{ index: 0, ...choice }],
      ...extra,
    });
    acc.add(chunk({ delta: { role: 'assistant' } }, { prompt_token_ids: [1, 2] }));
    acc.add(chunk({ delta: { content: 'Hel' }, token_ids: [10] }));
    acc.add(chunk({ delta: { content: 'lo' }, token_ids: [11] }));
    acc.add(
      chunk({ delta: { tool_calls: [{ index: 1, id: 'b', function: { name: 'two', arguments: '{"y"' } }] } }),
    );
    acc.add(
      chunk({ delta: { tool_calls: [{ index: 0, id: 'a', function: { name: 'one', arguments: '{}' } }] } }),
    );
    acc.add(chunk({ delta: { tool_calls: [{ index: 1, function: { arguments: ': 1}' } }] } }));
    acc.add(chunk({ delta: {}, finish_reason: 'tool_calls' }));
    acc.add({ choices: [], usage: { prompt_tokens: 2, completion_tokens: 2 } });
    acc.add('not a chunk');
    expect(parseCompletion(acc.completion(), 0)).toEqual({
      message: {
        role: 'assistant',
        content: 'Hello',
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'one', arguments: '{}' } },
          { id: 'b', type: 'function', function: { name: 'two', arguments: '{"y": 1}' } },
        ],
      },
      finishReason: 'tool_calls',
      providerFinishReason: 'tool_calls',
      usage: { inputTokens: 2, outputTokens: 2 },
      tokens: { promptIds: [1, 2], completionIds: [10, 11] },
      model: 'm',
    });
  });
});

describe('toWireMessages', () => {
  it('keeps tool-call assistant messages with null content and drops empty tool_calls', () => {
    expect(
      toWireMessages(
        [
          { role: 'assistant', content: 'text', tool_calls: [] },
          { role: 'assistant', content: null },
        ],
        { reasoningHistory: 'drop', toolImages: 'user_message' },
      ),
    ).toEqual([
      { role: 'assistant', content: 'text' },
      { role: 'assistant', content: '' },
    ]);
  });
});
