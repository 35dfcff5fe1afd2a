import { describe, expect, it } from 'vitest';
import { errorFrame, openEnvCodeOf, parseOpenEnvFrame, type ParsedFrame } from './openenv-protocol.js';
import { ownOrigin } from './openenv.js';

function refusal(frame: ParsedFrame): { code: string; message: string; field?: string } {
  if (frame.ok) throw new Error(`expected a refusal, got ${JSON.stringify(frame.request)}`);
  return frame.error;
}

describe('parseOpenEnvFrame', () => {
  it('parses the four frames of OpenEnv’s protocol', () => {
    expect(parseOpenEnvFrame('{"type": "reset", "data": {"taskId": "t", "seed": 42}}')).toEqual({
      ok: true,
      request: { type: 'reset', data: { taskId: 't', seed: 42 } },
    });
    // OpenEnv's client sends `data: {}` for a reset without arguments.
    expect(parseOpenEnvFrame('{"type": "reset", "data": {}}')).toEqual({
      ok: true,
      request: { type: 'reset', data: {} },
    });
    expect(parseOpenEnvFrame('{"type": "reset"}')).toEqual({
      ok: true,
      request: { type: 'reset', data: {} },
    });
    expect(
      parseOpenEnvFrame(
        '{"type": "step", "data": {"message": {"role": "assistant", "content": "hi"}, "turnId": "t1"}}',
      ),
    ).toEqual({
      ok: true,
      request: {
        type: 'step',
        action: { kind: 'message', message: { role: 'assistant', content: 'hi' }, turnId: 't1' },
      },
    });
    expect(parseOpenEnvFrame('{"type": "state"}')).toEqual({ ok: true, request: { type: 'state' } });
    expect(parseOpenEnvFrame('{"type": "close"}')).toEqual({ ok: true, request: { type: 'close' } });
    expect(parseOpenEnvFrame('{"type": "close", "data": {}}')).toEqual({
      ok: true,
      request: { type: 'close' },
    });
  });

  it('parses OpenEnv’s call_tool and list_tools actions', () => {
    expect(
      parseOpenEnvFrame(
        '{"type": "step", "data": {"type": "call_tool", "tool_name": "bash", "arguments": {"command": "ls"}}}',
      ),
    ).toEqual({
      ok: true,
      request: {
        type: 'step',
        action: { kind: 'call_tool', toolName: 'bash', arguments: { command: 'ls' } },
      },
    });
    expect(
      parseOpenEnvFrame('{"type": "step", "data": {"type": "call_tool", "tool_name": "bash"}}'),
    ).toMatchObject({
      ok: true,
      request: { action: { arguments: {} } },
    });
    expect(parseOpenEnvFrame('{"type": "step", "data": {"type": "list_tools"}}')).toEqual({
      ok: true,
      request: { type: 'step', action: { kind: 'list_tools' } },
    });
  });

  it('answers malformed JSON with INVALID_JSON and an unknown type with UNKNOWN_TYPE', () => {
    expect(refusal(parseOpenEnvFrame('{"type": "reset", ')).code).toBe('INVALID_JSON');
    expect(refusal(parseOpenEnvFrame('')).code).toBe('INVALID_JSON');
    // Duplicate keys are refused by the strict parser (no "last one wins" smuggling).
    expect(refusal(parseOpenEnvFrame('{"type": "state", "type": "reset"}')).code).toBe('INVALID_JSON');
    expect(refusal(parseOpenEnvFrame('{"type": "teleport"}'))).toEqual({
      code: 'UNKNOWN_TYPE',
      message: 'Unknown message type: teleport',
    });
    // Nesting past the bound is refused before anything reads it.
    expect(
      refusal(parseOpenEnvFrame(`{"type": "reset", "data": ${'['.repeat(100)}${']'.repeat(100)}}`)).code,
    ).toBe('INVALID_JSON');
  });

  it('refuses what is not a frame with VALIDATION_ERROR naming the field', () => {
    expect(refusal(parseOpenEnvFrame('[1, 2]')).code).toBe('VALIDATION_ERROR');
    expect(refusal(parseOpenEnvFrame('"reset"')).code).toBe('VALIDATION_ERROR');
    expect(refusal(parseOpenEnvFrame('{"data": {}}'))).toMatchObject({
      code: 'VALIDATION_ERROR',
      field: 'type',
    });
    expect(refusal(parseOpenEnvFrame('{"type": 3}'))).toMatchObject({
      code: 'VALIDATION_ERROR',
      field: 'type',
    });
    expect(refusal(parseOpenEnvFrame('{"type": "state", "extra": 1}'))).toMatchObject({
      code: 'VALIDATION_ERROR',
      field: 'extra',
    });
    expect(refusal(parseOpenEnvFrame('{"type": "state", "data": {"x": 1}}'))).toMatchObject({
      field: 'data',
    });
    expect(refusal(parseOpenEnvFrame('{"type": "step"}'))).toMatchObject({ field: 'data' });
  });

  it('never ignores a reset argument: an unknown one, OpenEnv’s episode_id and a bad seed are refused by name', () => {
    expect(refusal(parseOpenEnvFrame('{"type": "reset", "data": {"sede": 1}}'))).toMatchObject({
      code: 'VALIDATION_ERROR',
      field: 'data.sede',
      message: 'data.sede: unknown field data.sede',
    });
    expect(refusal(parseOpenEnvFrame('{"type": "reset", "data": {"episode_id": "e1"}}')).field).toBe(
      'data.episode_id',
    );
    for (const seed of ['-1', '1.5', '"42"', '1e300', 'null'])
      expect(refusal(parseOpenEnvFrame(`{"type": "reset", "data": {"seed": ${seed}}}`)).field).toBe(
        'data.seed',
      );
    expect(refusal(parseOpenEnvFrame('{"type": "reset", "data": {"toolProfile": "nope"}}')).field).toBe(
      'data.toolProfile',
    );
    // A live episode has its own seed: giving one with episodeId is a contradiction, not a choice.
    expect(
      refusal(parseOpenEnvFrame('{"type": "reset", "data": {"episodeId": "ep_1", "seed": 3}}')).field,
    ).toBe('data.seed');
    expect(parseOpenEnvFrame('{"type": "reset", "data": {"episodeId": "ep_1"}}')).toMatchObject({ ok: true });
    expect(refusal(parseOpenEnvFrame('{"type": "reset", "data": {"episodeId": "../x"}}')).field).toBe(
      'data.episodeId',
    );
  });

  it('refuses a bad step action by name', () => {
    expect(
      refusal(parseOpenEnvFrame('{"type": "step", "data": {"message": {"role": "user", "content": "x"}}}'))
        .field,
    ).toBe('data.message.role');
    expect(refusal(parseOpenEnvFrame('{"type": "step", "data": {"msg": {}}}')).field).toBe('data.message');
    expect(refusal(parseOpenEnvFrame('{"type": "step", "data": {"type": "jump"}}')).field).toBe('data.type');
    expect(refusal(parseOpenEnvFrame('{"type": "step", "data": {"type": "call_tool"}}')).field).toBe(
      'data.tool_name',
    );
    expect(
      refusal(
        parseOpenEnvFrame(
          '{"type": "step", "data": {"type": "call_tool", "tool_name": "bash", "arguments": [1]}}',
        ),
      ).field,
    ).toBe('data.arguments');
    expect(
      refusal(
        parseOpenEnvFrame(
          '{"type": "step", "data": {"message": {"role": "assistant", "content": "x"}, "turnId": "a b"}}',
        ),
      ).field,
    ).toBe('data.turnId');
    expect(refusal(parseOpenEnvFrame('{"type": "step", "data": {"type": "list_tools", "x": 1}}')).field).toBe(
      'data.x',
    );
  });
});

describe('openEnvCodeOf and errorFrame', () => {
  it('maps the HTTP protocol’s answers to OpenEnv’s codes', () => {
    expect(openEnvCodeOf(503, 'AT_CAPACITY')).toBe('CAPACITY_REACHED');
    expect(openEnvCodeOf(400, 'INVALID_REQUEST')).toBe('VALIDATION_ERROR');
    expect(openEnvCodeOf(404, 'TASK_NOT_FOUND')).toBe('VALIDATION_ERROR');
    expect(openEnvCodeOf(404, 'EPISODE_NOT_FOUND')).toBe('SESSION_ERROR');
    expect(openEnvCodeOf(409, 'EPISODE_DONE')).toBe('EXECUTION_ERROR');
    expect(openEnvCodeOf(500, 'CONFINEMENT_UNAVAILABLE')).toBe('FACTORY_ERROR');
  });

  it('writes OpenEnv’s error frame', () => {
    expect(JSON.parse(errorFrame({ code: 'INVALID_JSON', message: 'Invalid JSON: x' }))).toEqual({
      type: 'error',
      data: { code: 'INVALID_JSON', message: 'Invalid JSON: x' },
    });
  });
});

describe('ownOrigin', () => {
  it('allows no Origin and the server’s own loopback address; refuses every other origin', () => {
    expect(ownOrigin(undefined, '127.0.0.1:8765')).toBe(true);
    expect(ownOrigin('http://127.0.0.1:8765', '127.0.0.1:8765')).toBe(true);
    expect(ownOrigin('http://localhost:8765', 'localhost:8765')).toBe(true);
    expect(ownOrigin('http://[::1]:8765', '[::1]:8765')).toBe(true);
    expect(ownOrigin('http://127.0.0.1:9999', '127.0.0.1:8765')).toBe(false);
    expect(ownOrigin('http://evil.example:8765', 'evil.example:8765')).toBe(false);
    expect(ownOrigin('https://127.0.0.1:8765', '127.0.0.1:8765')).toBe(false);
    expect(ownOrigin('null', '127.0.0.1:8765')).toBe(false);
    expect(ownOrigin('http://127.0.0.1:8765', undefined)).toBe(false);
  });
});
