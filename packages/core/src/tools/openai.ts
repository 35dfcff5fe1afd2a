// The `openai` profile: OpenAI's `shell` (`{commands[], timeout_ms?, max_output_length?}`,
// answered per command with `{stdout, stderr, outcome}`) and `apply_patch` with a V4A patch,
// applied by the demoted patcher (apply-patch.ts) through the sandbox's file tools.
import { MiB } from '@karotte/base';
import { z } from 'zod';
import type { ShellOutcome } from '../world.js';
import { applyPatch, parsePatch, PATCH_LIMITS } from './apply-patch.js';
import {
  defineProfile,
  defineTool,
  done,
  fileLimits,
  filesOf,
  isFiles,
  refused,
  runShell,
  type PartialResult,
} from './common.js';
import type { ToolProfile } from './profile.js';

/** Commands one `shell` call runs at most. */
const SHELL_MAX_COMMANDS = 32;

/** One command's answer, as the Responses API's `shell_call_output` has it. */
interface ShellCommandOutput {
  readonly stdout: string;
  readonly stderr: string;
  readonly outcome: { readonly type: 'exit'; readonly exit_code: number } | { readonly type: 'timeout' };
}

function cut(text: string, maxCharacters: number | undefined): string {
  if (maxCharacters === undefined || text.length <= maxCharacters) return text;
  return `${text.slice(0, maxCharacters)}\n[... ${text.length - maxCharacters} more characters not shown]`;
}

function commandOutput(outcome: ShellOutcome, maxCharacters: number | undefined): ShellCommandOutput {
  // What the shell says about itself (a restart, truncated output) goes with stderr.
  const notes = [
    ...(outcome.note === undefined ? [] : [`[note] ${outcome.note}`]),
    ...(outcome.truncated
      ? [`[output truncated: ${outcome.stdoutBytes} bytes stdout, ${outcome.stderrBytes} bytes stderr]`]
      : []),
  ];
  const stderr = [cut(outcome.stderr, maxCharacters), ...notes].filter((part) => part !== '').join('\n');
  return {
    stdout: cut(outcome.stdout, maxCharacters),
    stderr,
    // A shell killed mid-command has no exit status of its own: -1, and the note says why.
    outcome: outcome.timedOut ? { type: 'timeout' } : { type: 'exit', exit_code: outcome.exitCode ?? -1 },
  };
}

const shell = defineTool({
  spec: {
    name: 'shell',
    description:
      'Run shell commands, in order, in your persistent bash shell (the working directory and exported variables carry over). Each command gets its own output and outcome. A command past its timeout is stopped and the shell goes on.',
    parameters: {
      type: 'object',
      properties: {
        commands: {
          type: 'array',
          items: { type: 'string' },
          minItems: 1,
          maxItems: SHELL_MAX_COMMANDS,
          description: 'The commands to run, in order.',
        },
        timeout_ms: {
          type: ['integer', 'null'],
          description: 'Timeout of each command in milliseconds (capped by the task).',
        },
        max_output_length: {
          type: ['integer', 'null'],
          description: 'Most characters of stdout, and of stderr, returned for each command.',
        },
      },
      required: ['commands'],
      additionalProperties: false,
    },
  },
  arguments: z
    .object({
      commands: z.array(z.string().max(MiB)).min(1).max(SHELL_MAX_COMMANDS),
      timeout_ms: z.number().int().positive().nullish(),
      max_output_length: z.number().int().positive().max(10_000_000).nullish(),
    })
    .strict(),
  async run(args, context): Promise<PartialResult> {
    const output: ShellCommandOutput[] = [];
    let last: ShellOutcome | undefined;
    let ok = true;
    const maxCharacters = args.max_output_length ?? undefined;
    for (const command of args.commands) {
      if (context.abortSignal.aborted) break;
      last = await runShell(context, command, args.timeout_ms ?? undefined);
      ok &&= last.exitCode === 0 && !last.timedOut;
      output.push(commandOutput(last, maxCharacters));
    }
    const skipped = args.commands.length - output.length;
    const text = JSON.stringify({
      output,
      ...(args.max_output_length === undefined ? {} : { max_output_length: args.max_output_length }),
    });
    const note =
      skipped > 0
        ? `${skipped} command(s) not run: the episode was cancelled or is over its wall time`
        : last?.note;
    return {
      ok: ok && skipped === 0,
      content: [{ type: 'text', text }],
      ...(last === undefined ? {} : { shell: last }),
      ...(note === undefined ? {} : { note }),
    };
  },
});

const applyPatchTool = defineTool({
  spec: {
    name: 'apply_patch',
    description: [
      'Edit files with a patch in the V4A format:',
      '*** Begin Patch',
      '*** Add File: <path>        (every following line starts with + and is a line of the new file)',
      '*** Delete File: <path>',
      '*** Update File: <path>',
      '*** Move to: <new path>     (optional, right after Update File)',
      '@@ <a line to find, such as a function definition>   (optional; more @@ lines narrow it down)',
      ' <context line>   (3 lines before and after each change)',
      '-<line to remove>',
      '+<line to add>',
      '*** End of File   (optional: the hunk ends the file)',
      '*** End Patch',
      'Paths are relative to the working directory (the home directory). Nothing is written unless every hunk fits; Add File and Move to never overwrite an existing file.',
    ].join('\n'),
    parameters: {
      type: 'object',
      properties: {
        input: { type: 'string', description: 'The whole patch, from *** Begin Patch to *** End Patch.' },
      },
      required: ['input'],
      additionalProperties: false,
    },
  },
  arguments: z.object({ input: z.string().max(PATCH_LIMITS.maxPatchCharacters) }).strict(),
  async run(args, context): Promise<PartialResult> {
    const parsed = parsePatch(args.input);
    if (!parsed.ok) return refused(`Invalid patch: ${parsed.error}`);
    const files = filesOf(context);
    if (!isFiles(files)) return files;
    const outcome = await applyPatch(parsed.operations, files, fileLimits(context));
    const fuzzy = outcome.fuzzy.length > 0 ? `\nMatched loosely: ${outcome.fuzzy.join(', ')}` : '';
    if (!outcome.ok) {
      const changed =
        outcome.changed.length > 0 ? `\nChanged before the failure:\n${outcome.changed.join('\n')}` : '';
      return refused(`apply_patch failed: ${outcome.error ?? 'unknown error'}${changed}${fuzzy}`);
    }
    return done(`Success. Updated the following files:\n${outcome.changed.join('\n')}${fuzzy}`);
  },
});

/** The `openai` profile: `shell` and `apply_patch` (V4A). */
export function createOpenAIProfile(): ToolProfile {
  return defineProfile('openai', [shell, applyPatchTool]);
}
