// The `anthropic` profile: Anthropic's `bash` (bash_20250124: `{command, restart?}`) and its
// text editor `str_replace_based_edit_tool` (text_editor_20250728: view, create, str_replace,
// insert; `max_characters` bounds what view shows). Every file operation is done by the
// sandbox's file tools, as the student.
import path from 'node:path';
import { MiB } from '@karotte/base';
import { z } from 'zod';
import {
  defineProfile,
  defineTool,
  describeFailure,
  done,
  fileLimits,
  filesOf,
  isFiles,
  pathArgument,
  quote,
  refused,
  runShell,
  shellResult,
  type PartialResult,
} from './common.js';
import type { ToolProfile, ToolRunContext } from './profile.js';
import type { StudentFiles } from '../world.js';

/** Characters `view` shows at most when the profile is made without `maxCharacters`. */
export const DEFAULT_MAX_CHARACTERS = 100_000;
/** The largest file `str_replace` and `insert` edit, before and after. */
const EDIT_MAX_FILE_BYTES = 10 * MiB;
/** Entries a directory `view` lists at most. */
const VIEW_MAX_ENTRIES = 1000;
/** Lines of the edited file shown around an edit. */
const SNIPPET_LINES = 4;

const CLIPPED =
  '<response clipped><NOTE>To save on context only part of this file has been shown to you. Use `view_range` to see the rest.</NOTE>';

/** The lines of a text, without their terminators (a final newline ends the last line). */
function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** The 1-based number of the line holding `position`. */
function lineNumberAt(text: string, position: number): number {
  let line = 1;
  for (let at = text.indexOf('\n'); at !== -1 && at < position; at = text.indexOf('\n', at + 1)) line += 1;
  return line;
}

/** `cat -n`: the line number right-aligned in 6 columns, a tab, the line. */
function numbered(lines: readonly string[], firstLine: number): string {
  return lines.map((line, index) => `${String(firstLine + index).padStart(6)}\t${line}`).join('\n');
}

function clip(text: string, maxCharacters: number, clipped: boolean): string {
  if (!clipped && text.length <= maxCharacters) return text;
  return `${text.slice(0, maxCharacters)}\n${CLIPPED}`;
}

const bash = defineTool({
  spec: {
    name: 'bash',
    description:
      'Run commands in a persistent bash shell. State (the working directory, variables, files) carries over between calls. A command past its timeout is stopped and the shell goes on. Set `restart` to true to restart the shell.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'The bash command to run.' },
        restart: { type: 'boolean', description: 'Set to true to restart the bash session.' },
      },
      additionalProperties: false,
    },
  },
  arguments: z.object({ command: z.string().max(MiB).optional(), restart: z.boolean().optional() }).strict(),
  async run(args, context): Promise<PartialResult> {
    if (args.restart === true) {
      if (context.world.restart === undefined) return refused('this world cannot restart its shell');
      await context.world.restart();
      if (args.command === undefined) {
        return { ...done('tool has been restarted.'), note: 'the shell was restarted' };
      }
    }
    if (args.command === undefined) return refused('no command given: set `command`, or `restart` to true');
    return shellResult(await runShell(context, args.command, undefined));
  },
});

const editorArguments = z
  .object({
    command: z.enum(['view', 'create', 'str_replace', 'insert']),
    path: pathArgument,
    view_range: z.tuple([z.number().int(), z.number().int()]).optional(),
    file_text: z.string().max(EDIT_MAX_FILE_BYTES).optional(),
    old_str: z.string().max(EDIT_MAX_FILE_BYTES).optional(),
    new_str: z.string().max(EDIT_MAX_FILE_BYTES).optional(),
    insert_line: z.number().int().optional(),
    insert_text: z.string().max(EDIT_MAX_FILE_BYTES).optional(),
  })
  .strict();
type EditorArguments = z.infer<typeof editorArguments>;

function editorTool(maxCharacters: number) {
  return defineTool({
    spec: {
      name: 'str_replace_based_edit_tool',
      description: [
        'View, create and edit text files.',
        '* `view` on a file shows it with line numbers (like `cat -n`); on a directory it lists the files and directories up to 2 levels deep, hidden ones left out.',
        `* Long output is cut after ${maxCharacters} characters and marked with \`<response clipped>\`: use \`view_range\` to see the rest.`,
        '* `create` makes a new file with `file_text`; it cannot overwrite a file that exists.',
        '* `str_replace` replaces `old_str` with `new_str`. `old_str` must match EXACTLY one place in the file, whitespace and indentation included; when it matches none or more than one, nothing is replaced: add context to make it unique.',
        '* `insert` inserts `insert_text` AFTER line `insert_line` (0 inserts at the start of the file).',
        '* Paths are absolute.',
      ].join('\n'),
      parameters: {
        type: 'object',
        properties: {
          command: {
            type: 'string',
            enum: ['view', 'create', 'str_replace', 'insert'],
            description: 'The command to run: `view`, `create`, `str_replace` or `insert`.',
          },
          path: {
            type: 'string',
            description: 'Absolute path of the file or directory, e.g. `/home/user/file.py` or `/home/user`.',
          },
          view_range: {
            type: 'array',
            items: { type: 'integer' },
            minItems: 2,
            maxItems: 2,
            description:
              'For `view` of a file: the lines to show, [start, end], 1-based and inclusive; `[start, -1]` shows from `start` to the end of the file. Without it the whole file is shown.',
          },
          file_text: { type: 'string', description: 'For `create`: the content of the new file.' },
          old_str: { type: 'string', description: 'For `str_replace`: the exact text to replace.' },
          new_str: {
            type: 'string',
            description: 'For `str_replace`: the text to put in its place (empty when left out).',
          },
          insert_line: {
            type: 'integer',
            minimum: 0,
            description: 'For `insert`: the line after which the text is inserted (0: at the start).',
          },
          insert_text: {
            type: 'string',
            description: 'For `insert`: the text to insert (`new_str` is accepted too).',
          },
        },
        required: ['command', 'path'],
        additionalProperties: false,
      },
    },
    arguments: editorArguments,
    async run(args, context): Promise<PartialResult> {
      if (!path.isAbsolute(args.path)) {
        return refused(
          `The path ${quote(args.path, 300)} is not an absolute path, it should start with \`/\`.`,
        );
      }
      const files = filesOf(context);
      if (!isFiles(files)) return files;
      switch (args.command) {
        case 'view':
          return view(files, args, context, maxCharacters);
        case 'create':
          return create(files, args, context);
        case 'str_replace':
          return strReplace(files, args, context, maxCharacters);
        case 'insert':
          return insert(files, args, context, maxCharacters);
      }
    },
  });
}

async function view(
  files: StudentFiles,
  args: EditorArguments,
  context: ToolRunContext,
  maxCharacters: number,
): Promise<PartialResult> {
  const shown = quote(args.path, 300);
  const [start, end] = args.view_range ?? [1, -1];
  if (args.view_range !== undefined) {
    if (start < 1)
      return refused(`Invalid \`view_range\`: its first element \`${start}\` must be at least 1.`);
    if (end !== -1 && end < start) {
      return refused(
        `Invalid \`view_range\`: its second element \`${end}\` must be -1 or at least its first element \`${start}\`.`,
      );
    }
  }
  const limits = fileLimits(context);
  const result = await files.view({
    path: args.path,
    startLine: start,
    endLine: end === -1 ? Number.MAX_SAFE_INTEGER : end,
    // A character takes at most 4 bytes; the numbered text is cut to maxCharacters below.
    maxBytes: Math.min(16 * MiB, maxCharacters * 4),
    partialLine: true,
    ...limits,
  });
  if (!result.ok && result.code === 'EISDIR') {
    if (args.view_range !== undefined) {
      return refused('The `view_range` parameter is not allowed when `path` points to a directory.');
    }
    const listed = await files.list({
      path: args.path,
      depth: 2,
      includeHidden: false,
      maxEntries: VIEW_MAX_ENTRIES,
      ...limits,
    });
    if (!listed.ok) return refused(describeFailure(listed, args.path));
    const base = args.path.replace(/\/+$/, '') || '/';
    const names = listed.entries.map(
      (entry) => `${path.posix.join(base, entry.name)}${entry.type === 'directory' ? '/' : ''}`,
    );
    const more = listed.truncated
      ? `\n(more entries not shown: the first ${VIEW_MAX_ENTRIES} are listed)`
      : '';
    const text = `Here are the files and directories up to 2 levels deep in ${shown}, excluding hidden items:\n${[base, ...names].join('\n')}${more}`;
    return done(clip(text, maxCharacters, false));
  }
  if (!result.ok) return refused(describeFailure(result, args.path));
  if (result.content === '' && start > 1) {
    const lines =
      result.totalLines === null
        ? 'more lines than the viewer reads (its first 64 MiB)'
        : `${result.totalLines} lines`;
    return refused(
      `Invalid \`view_range\`: its first element \`${start}\` is past the end of the file, which has ${lines}.`,
    );
  }
  const body = numbered(splitLines(result.content), start);
  return done(
    clip(`Here's the result of running \`cat -n\` on ${shown}:\n${body}`, maxCharacters, result.truncated),
  );
}

async function create(
  files: StudentFiles,
  args: EditorArguments,
  context: ToolRunContext,
): Promise<PartialResult> {
  if (args.file_text === undefined) return refused('Parameter `file_text` is required for command: create');
  const written = await files.write({
    path: args.path,
    content: args.file_text,
    createOnly: true,
    createParents: true,
    ...fileLimits(context),
  });
  if (!written.ok && written.code === 'EEXIST') {
    return refused(
      `File already exists at: ${quote(args.path, 300)}. Cannot overwrite files using command \`create\`.`,
    );
  }
  if (!written.ok) return refused(describeFailure(written, args.path));
  return done(`File created successfully at: ${quote(args.path, 300)}`);
}

/** Read a file to edit it: its text and hash, or the refusal. */
async function readForEdit(
  files: StudentFiles,
  filePath: string,
  context: ToolRunContext,
): Promise<{ content: string; sha256: string } | PartialResult> {
  const read = await files.readText({
    path: filePath,
    maxBytes: EDIT_MAX_FILE_BYTES,
    ...fileLimits(context),
  });
  if (read.ok) return { content: read.content, sha256: read.sha256 };
  if (read.code === 'FILE_TOO_LARGE') return refused(`File too large to edit: ${read.message}`);
  return refused(describeFailure(read, filePath));
}

/** Write an edit over the text it was computed from (a change in between is refused). */
async function writeEdit(
  files: StudentFiles,
  filePath: string,
  next: string,
  sha256: string,
  context: ToolRunContext,
): Promise<PartialResult | undefined> {
  if (Buffer.byteLength(next, 'utf8') > EDIT_MAX_FILE_BYTES) {
    return refused(
      `The edit would make ${quote(filePath, 300)} larger than ${EDIT_MAX_FILE_BYTES} bytes; nothing was written.`,
    );
  }
  const written = await files.write({
    path: filePath,
    content: next,
    expectedSha256: sha256,
    ...fileLimits(context),
  });
  return written.ok ? undefined : refused(describeFailure(written, filePath));
}

function snippet(
  text: string,
  firstChangedLine: number,
  changedLines: number,
  maxCharacters: number,
): string {
  const lines = splitLines(text);
  const from = Math.max(1, firstChangedLine - SNIPPET_LINES);
  const to = Math.min(lines.length, firstChangedLine + changedLines - 1 + SNIPPET_LINES);
  return clip(numbered(lines.slice(from - 1, to), from), maxCharacters, false);
}

function edited(filePath: string, body: string): PartialResult {
  const shown = quote(filePath, 300);
  return done(
    `The file ${shown} has been edited. Here's the result of running \`cat -n\` on a snippet of ${shown}:\n${body}\nReview the changes and make sure they are as expected. Edit the file again if necessary.`,
  );
}

async function strReplace(
  files: StudentFiles,
  args: EditorArguments,
  context: ToolRunContext,
  maxCharacters: number,
): Promise<PartialResult> {
  const oldStr = args.old_str;
  if (oldStr === undefined) return refused('Parameter `old_str` is required for command: str_replace');
  if (oldStr === '') return refused('Parameter `old_str` must not be empty');
  const newStr = args.new_str ?? '';
  const read = await readForEdit(files, args.path, context);
  if (!('sha256' in read)) return read;
  const positions: number[] = [];
  for (let at = read.content.indexOf(oldStr); at !== -1 && positions.length < 21;) {
    positions.push(at);
    at = read.content.indexOf(oldStr, at + 1);
  }
  const lineOf = (position: number): number => lineNumberAt(read.content, position);
  if (positions.length === 0) {
    return refused(
      `No replacement was performed, old_str \`${quote(oldStr, 200)}\` did not appear verbatim in ${quote(args.path, 300)}.`,
    );
  }
  if (positions.length > 1) {
    const lines = [...new Set(positions.slice(0, 20).map(lineOf))];
    return refused(
      `No replacement was performed. Multiple occurrences of old_str \`${quote(oldStr, 200)}\` in lines ${JSON.stringify(lines)}${positions.length > 20 ? ' and more' : ''}. Please ensure it is unique.`,
    );
  }
  const at = positions[0]!;
  const next = read.content.slice(0, at) + newStr + read.content.slice(at + oldStr.length);
  const failed = await writeEdit(files, args.path, next, read.sha256, context);
  if (failed !== undefined) return failed;
  const first = lineOf(at);
  return edited(args.path, snippet(next, first, Math.max(1, splitLines(newStr).length), maxCharacters));
}

async function insert(
  files: StudentFiles,
  args: EditorArguments,
  context: ToolRunContext,
  maxCharacters: number,
): Promise<PartialResult> {
  if (args.insert_line === undefined)
    return refused('Parameter `insert_line` is required for command: insert');
  if (args.insert_text !== undefined && args.new_str !== undefined && args.insert_text !== args.new_str) {
    return refused('Give the text to insert once: `insert_text` and `new_str` differ');
  }
  const text = args.insert_text ?? args.new_str;
  if (text === undefined) return refused('Parameter `insert_text` is required for command: insert');
  const read = await readForEdit(files, args.path, context);
  if (!('sha256' in read)) return read;
  const lines = splitLines(read.content);
  const after = args.insert_line;
  if (after < 0 || after > lines.length) {
    return refused(
      `Invalid \`insert_line\` parameter: ${after}. It should be within the range of lines of the file: [0, ${lines.length}]`,
    );
  }
  // Whole lines go in: the text gets a final newline, and so does a last line without one.
  const block = text.endsWith('\n') || text === '' ? text : `${text}\n`;
  let offset = 0;
  for (let line = 0; line < after; line += 1)
    offset = read.content.indexOf('\n', offset) + 1 || read.content.length;
  let head = read.content.slice(0, offset);
  if (head !== '' && !head.endsWith('\n')) head += '\n';
  const next = head + block + read.content.slice(offset);
  const failed = await writeEdit(files, args.path, next, read.sha256, context);
  if (failed !== undefined) return failed;
  return edited(args.path, snippet(next, after + 1, Math.max(1, splitLines(block).length), maxCharacters));
}

/** Options of the `anthropic` profile. */
export interface AnthropicProfileOptions {
  /** Characters the editor's `view` shows at most (the tool's `max_characters`). @default 100000 */
  readonly maxCharacters?: number;
}

/**
 * The `anthropic` profile: `bash {command, restart?}` and `str_replace_based_edit_tool` with
 * `view`, `create`, `str_replace` and `insert`.
 */
export function createAnthropicProfile(options: AnthropicProfileOptions = {}): ToolProfile {
  const maxCharacters = options.maxCharacters ?? DEFAULT_MAX_CHARACTERS;
  return defineProfile('anthropic', [bash, editorTool(maxCharacters)]);
}
