// The model-native tool profiles by name: one hardened backend (the student's shell and the
// sandbox's file tools, acting as the student) behind the schemas models were trained on.
import { BadArgumentError, parseOptions } from '@karotte/base';
import { z } from 'zod';
import { createAnthropicProfile, DEFAULT_MAX_CHARACTERS } from './anthropic.js';
import { bashProfile } from './bash.js';
import { createKarotteProfile } from './karotte.js';
import { createOpenAIProfile } from './openai.js';
import type { ToolProfile } from './profile.js';

export type { StudentFiles } from '../world.js';

/** The names {@link createToolProfile} knows. */
export const TOOL_PROFILE_NAMES = Object.freeze(['bash', 'karotte', 'anthropic', 'openai'] as const);
export type ToolProfileName = (typeof TOOL_PROFILE_NAMES)[number];

/** Options of {@link createToolProfile}. */
export const toolProfileOptionsSchema = z
  .object({
    /**
     * Characters the `anthropic` editor's `view` shows at most (Anthropic's `max_characters`);
     * only that profile uses it. @default 100000
     */
    maxCharacters: z.number().int().positive().max(1_000_000).default(DEFAULT_MAX_CHARACTERS),
  })
  .strict();
export type ToolProfileOptions = z.input<typeof toolProfileOptionsSchema>;

/**
 * The tool profile named `name`: `bash` (the default: the contract's one tool, `bashProfile`),
 * `karotte` (`bash`, `view_lines_in_file`, `replace_in_file`,
 * `view_image_file`), `anthropic` (`bash`, `str_replace_based_edit_tool`) or `openai`
 * (`shell`, `apply_patch`). Each call of a profile runs as the student: commands in the
 * student's shell, file operations through the world's file tools.
 * @throws BadArgumentError (field `name`) for an unknown name, (field `maxCharacters`, …) for bad options.
 */
export function createToolProfile(name: string, options: ToolProfileOptions = {}): ToolProfile {
  const parsed = parseOptions(toolProfileOptionsSchema, options, 'tool profile options');
  switch (name) {
    case 'bash':
      return bashProfile;
    case 'karotte':
      return createKarotteProfile();
    case 'anthropic':
      return createAnthropicProfile({ maxCharacters: parsed.maxCharacters });
    case 'openai':
      return createOpenAIProfile();
    default:
      throw new BadArgumentError(
        `unknown tool profile ${JSON.stringify(name.slice(0, 64))}: expected one of ${TOOL_PROFILE_NAMES.join(', ')}`,
        { field: 'name' },
      );
  }
}
