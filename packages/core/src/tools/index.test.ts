// The profiles without a world: names, schemas, and every refusal that comes before any file
// or shell is touched. The world here fails the test if anything reaches it; the integration
// test (profiles.integration.test.ts) drives the same profiles against a real sandbox.
import { BadArgumentError } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import type { StudentWorld } from '../world.js';
import { headWithinJsonBytes } from './common.js';
import { createToolProfile, TOOL_PROFILE_NAMES } from './index.js';
import type { ToolProfile, ToolRunContext } from './profile.js';

const untouchable = new Proxy({} as StudentWorld, {
  get(_target, property) {
    throw new Error(`the world was used (${String(property)}) for a call that should be refused before it`);
  },
});
const context: ToolRunContext = {
  world: untouchable,
  commandTimeoutMs: 10_000,
  abortSignal: new AbortController().signal,
};

async function refusal(profile: ToolProfile, name: string, args: unknown): Promise<string> {
  const result = await profile.call({ id: 'call_0', name, arguments: args }, context);
  expect(result.ok).toBe(false);
  expect(result.content).toHaveLength(1);
  const [part] = result.content;
  if (part?.type !== 'text') throw new Error('expected a text part');
  expect(result.note).toBe(part.text);
  expect(result.durationMs).toBeGreaterThanOrEqual(0);
  return part.text;
}

describe('createToolProfile', () => {
  it('knows bash, karotte, anthropic and openai, each with the tools of its schema family', () => {
    expect(TOOL_PROFILE_NAMES).toEqual(['bash', 'karotte', 'anthropic', 'openai']);
    const tools = Object.fromEntries(
      TOOL_PROFILE_NAMES.map((name) => [name, createToolProfile(name).tools.map((tool) => tool.name)]),
    );
    expect(tools).toEqual({
      bash: ['bash'],
      karotte: ['bash', 'view_lines_in_file', 'replace_in_file', 'view_image_file'],
      anthropic: ['bash', 'str_replace_based_edit_tool'],
      openai: ['shell', 'apply_patch'],
    });
    for (const name of TOOL_PROFILE_NAMES) expect(createToolProfile(name).name).toBe(name);
    // The karotte profile's bash is the default profile's, schema and all.
    expect(createToolProfile('karotte').tools[0]).toBe(createToolProfile('bash').tools[0]);
  });

  it('refuses an unknown name (field name) and bad options (their field)', () => {
    const unknown = (() => {
      try {
        createToolProfile('swe-agent');
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(BadArgumentError.isInstance(unknown)).toBe(true);
    expect(unknown).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'name',
      message: 'unknown tool profile "swe-agent": expected one of bash, karotte, anthropic, openai',
    });
    expect(() => createToolProfile('anthropic', { maxCharacters: 0 })).toThrow(
      expect.objectContaining({ field: 'maxCharacters' }),
    );
    expect(() => createToolProfile('karotte', { maxChars: 10 } as never)).toThrow(
      expect.objectContaining({ field: 'maxChars' }),
    );
  });

  it('every tool schema is a strict JSON Schema object whose required fields it declares', () => {
    for (const name of TOOL_PROFILE_NAMES) {
      for (const tool of createToolProfile(name).tools) {
        const parameters = tool.parameters as {
          type: string;
          properties: Record<string, unknown>;
          required?: string[];
          additionalProperties: boolean;
        };
        expect(parameters.type).toBe('object');
        expect(parameters.additionalProperties).toBe(false);
        for (const field of parameters.required ?? [])
          expect(Object.keys(parameters.properties)).toContain(field);
        expect(tool.description.length).toBeGreaterThan(20);
      }
    }
  });

  it('the anthropic editor view tells the model its max_characters', () => {
    const editor = createToolProfile('anthropic', { maxCharacters: 1234 }).tools[1]!;
    expect(editor.description).toContain('1234 characters');
  });
});

describe('calls refused before the world is touched', () => {
  it('an unknown tool, and a known one with arguments of the wrong shape, name the problem', async () => {
    const karotte = createToolProfile('karotte');
    expect(await refusal(karotte, 'str_replace_based_edit_tool', {})).toBe(
      'unknown tool str_replace_based_edit_tool; the tools are bash, view_lines_in_file, replace_in_file, view_image_file',
    );
    const anthropic = createToolProfile('anthropic');
    expect(await refusal(anthropic, 'bash', { command: 'ls', timeout: 5 })).toBe(
      'invalid arguments for bash: unknown field timeout',
    );
    expect(await refusal(anthropic, 'bash', { command: 42 })).toMatch(
      /^invalid arguments for bash: command: /,
    );
    expect(await refusal(anthropic, 'bash', 'ls')).toMatch(/^invalid arguments for bash: arguments: /);
  });

  it('karotte: bash answers exactly as the default profile does, refusals included', async () => {
    const request = { id: 'c', name: 'bash', arguments: { command: 'ls', timeout: 5 } };
    const viaKarotte = await createToolProfile('karotte').call(request, context);
    const viaDefault = await createToolProfile('bash').call(request, context);
    expect({ ...viaKarotte, durationMs: 0 }).toEqual({ ...viaDefault, durationMs: 0 });
    expect(viaKarotte).toMatchObject({
      ok: false,
      note: 'malformed arguments: expected JSON {"command": string, "timeoutMs"?: number}',
    });
  });

  it('karotte: Python Karotte argument rules', async () => {
    const karotte = createToolProfile('karotte');
    const viewLines = (args: unknown): Promise<string> => refusal(karotte, 'view_lines_in_file', args);
    expect(await viewLines({ file_path: '/a', from_line: 0, to_line: 3 })).toBe(
      '`from_line` must be greater than or equal to 1',
    );
    expect(await viewLines({ file_path: '/a', from_line: 5, to_line: 4 })).toBe(
      '`to_line` must be greater than or equal to `from_line`',
    );
    expect(await viewLines({ file_path: '/a', from_line: 1, to_line: 1001 })).toBe(
      'Requested 1001 lines, but the limit is 1000 lines per call',
    );
    expect(await viewLines({ file_path: 'a.txt', from_line: 1, to_line: 2 })).toBe(
      'File path must be absolute: a.txt',
    );
    expect(await viewLines({ file_path: '/a\0b', from_line: 1, to_line: 2 })).toBe(
      'invalid arguments for view_lines_in_file: file_path: must not contain NUL bytes',
    );
    expect(await refusal(karotte, 'replace_in_file', { file_path: '/a', old: '', new: 'x' })).toBe(
      'String to replace must not be empty',
    );
    expect(await refusal(karotte, 'view_image_file', { file_path: 'pic.png' })).toBe(
      'File path must be absolute: pic.png',
    );
  });

  it('anthropic: bash needs a command, the editor an absolute path and a known command', async () => {
    const anthropic = createToolProfile('anthropic');
    expect(await refusal(anthropic, 'bash', {})).toBe(
      'no command given: set `command`, or `restart` to true',
    );
    const editor = (args: unknown): Promise<string> =>
      refusal(anthropic, 'str_replace_based_edit_tool', args);
    expect(await editor({ command: 'view', path: 'relative/file.py' })).toBe(
      'The path relative/file.py is not an absolute path, it should start with `/`.',
    );
    expect(await editor({ command: 'undo_edit', path: '/a' })).toMatch(
      /^invalid arguments for str_replace_based_edit_tool: command: /,
    );
    expect(await editor({ command: 'view', path: '/a', view_range: [1] })).toMatch(/view_range/);
    expect(await editor({ command: 'view', path: '/a\0' })).toMatch(/path: must not contain NUL bytes/);
  });

  it('openai: shell needs one to 32 commands, apply_patch a well-formed V4A patch', async () => {
    const openai = createToolProfile('openai');
    expect(await refusal(openai, 'shell', { commands: [] })).toMatch(
      /^invalid arguments for shell: commands: /,
    );
    expect(await refusal(openai, 'shell', { commands: Array.from({ length: 33 }, () => 'true') })).toMatch(
      /commands/,
    );
    expect(await refusal(openai, 'apply_patch', { input: '--- a/x\n+++ b/x\n' })).toBe(
      "Invalid patch: the patch must start with the line '*** Begin Patch'",
    );
    expect(await refusal(openai, 'apply_patch', { patch: '*** Begin Patch' })).toMatch(/unknown field patch/);
  });

  it('a cancelled episode runs nothing', async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await createToolProfile('karotte').call(
      { id: 'c', name: 'bash', arguments: { command: 'echo hi' } },
      { ...context, abortSignal: controller.signal },
    );
    expect(result).toMatchObject({ ok: false, note: 'the episode was cancelled or is over its wall time' });
  });
});

describe('headWithinJsonBytes', () => {
  it('keeps the longest prefix whose JSON encoding fits, never half a surrogate pair', () => {
    expect(headWithinJsonBytes('hello', 7)).toBe('hello');
    expect(headWithinJsonBytes('hello', 6)).toBe('hell');
    // A control character takes 6 bytes in JSON (\u0001).
    expect(headWithinJsonBytes('a\u0001b', 8)).toBe('a');
    expect(headWithinJsonBytes('😀😀', 7)).toBe('😀');
    expect(headWithinJsonBytes('😀😀', 5)).toBe('');
  });
});
