// The `karotte` profile: the contract's `bash` tool and the Python Karotte's file tools
// (`view_lines_in_file`, `replace_in_file`, `view_image_file`) with their semantics and caps,
// every file operation done by the sandbox's file tools as the student.
import path from 'node:path';
import { KiB, MiB } from '@karotte/base';
import { z } from 'zod';
import {
  defineProfile,
  describeFailure,
  done,
  fileLimits,
  filesOf,
  headWithinJsonBytes,
  isFiles,
  pathArgument,
  quote,
  refused,
  defineTool,
  type ProfileTool,
} from './common.js';
import { inspectImage } from './image.js';
import { bashProfile } from './bash.js';
import type { ToolProfile } from './profile.js';
import { replacementDiff } from './replace-diff.js';

/** Lines one `view_lines_in_file` call shows at most. */
const VIEW_MAX_LINES = 1000;
/** JSON-encoded bytes of the content one `view_lines_in_file` call shows at most. */
const VIEW_MAX_CONTENT_BYTES = 384 * KiB;
/** The largest file `replace_in_file` edits, before and after. */
const REPLACE_MAX_FILE_BYTES = 10 * MiB;
/** The largest image file `view_image_file` shows. */
const IMAGE_MAX_BYTES = 5 * MiB;
/** The most pixels an image shown by `view_image_file` has on either side. */
const IMAGE_MAX_SIDE_PIXELS = 2000;

const VIEW_TRUNCATION_NOTE = `\n\n[... output truncated: exceeded ${VIEW_MAX_CONTENT_BYTES} bytes; request a narrower line range ...]`;

/**
 * `bash` is the default profile's own tool (bash.ts): the same schema, timeout rule, refusals
 * and rendering, so the contract's tool works unchanged in this profile.
 */
const bash: ProfileTool = {
  spec: bashProfile.tools[0]!,
  validate: (raw) => (context) => bashProfile.call({ id: 'bash', name: 'bash', arguments: raw }, context),
};

const viewLines = defineTool({
  spec: {
    name: 'view_lines_in_file',
    description: [
      'Read lines from a file.',
      'The file_path must be an absolute path. Lines are 1-indexed (first line is 1). Both from_line and to_line are inclusive.',
      `You can read up to ${VIEW_MAX_LINES} lines at a time. For larger files, make multiple calls with different ranges.`,
      'To read the beginning of a file, use from_line=1. To continue reading, use from_line=(previous to_line + 1).',
    ].join('\n\n'),
    parameters: {
      type: 'object',
      properties: {
        file_path: { type: 'string', description: 'absolute path of the file' },
        from_line: { type: 'integer', minimum: 1, description: 'first line to show (1-based)' },
        to_line: { type: 'integer', minimum: 1, description: 'last line to show (inclusive)' },
      },
      required: ['file_path', 'from_line', 'to_line'],
      additionalProperties: false,
    },
  },
  arguments: z
    .object({ file_path: pathArgument, from_line: z.number().int(), to_line: z.number().int() })
    .strict(),
  async run(args, context) {
    const { file_path: filePath, from_line: from, to_line: to } = args;
    if (from < 1) return refused('`from_line` must be greater than or equal to 1');
    if (to < from) return refused('`to_line` must be greater than or equal to `from_line`');
    const requested = to - from + 1;
    if (requested > VIEW_MAX_LINES) {
      return refused(`Requested ${requested} lines, but the limit is ${VIEW_MAX_LINES} lines per call`);
    }
    if (!path.isAbsolute(filePath)) return refused(`File path must be absolute: ${quote(filePath, 300)}`);
    const files = filesOf(context);
    if (!isFiles(files)) return files;
    const result = await files.view({
      path: filePath,
      startLine: from,
      endLine: to,
      maxBytes: VIEW_MAX_CONTENT_BYTES,
      partialLine: true,
      ...fileLimits(context),
    });
    if (!result.ok) return refused(describeFailure(result, filePath));
    let content = headWithinJsonBytes(
      result.content,
      VIEW_MAX_CONTENT_BYTES - Buffer.byteLength(JSON.stringify(VIEW_TRUNCATION_NOTE)),
    );
    const truncated = result.truncated || content.length < result.content.length;
    if (truncated) content += VIEW_TRUNCATION_NOTE;
    if (!truncated && content === '' && from > 1) {
      const has =
        result.totalLines === null
          ? ' is larger than the viewer reads (its first 64 MiB)'
          : ` has ${result.totalLines} lines`;
      return refused(`File ${quote(filePath, 300)}${has}, but you requested lines ${from}-${to}`);
    }
    return done(JSON.stringify({ file_path: filePath, from_line: from, to_line: to, content }));
  },
});

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count += 1;
  return count;
}

const replaceInFile = defineTool({
  spec: {
    name: 'replace_in_file',
    description: [
      'Perform exact string replacement in a file.',
      'The file_path must be an absolute path.',
      'By default, only the first occurrence of `old` is replaced. Set `replace_all` to true to replace every occurrence.',
      'The replacement will FAIL if `old` is not found in the file. Use `view_lines_in_file` to see the exact file contents, including whitespace and indentation, before attempting the replacement.',
      'When replacing code, preserve the exact indentation (tabs/spaces) as it appears in the file.',
    ].join('\n\n'),
    parameters: {
      type: 'object',
      properties: {
        file_path: { type: 'string', description: 'absolute path of the file' },
        old: { type: 'string', description: 'the exact text to replace (not empty)' },
        new: { type: 'string', description: 'the text to put in its place' },
        replace_all: { type: 'boolean', default: false, description: 'replace every occurrence' },
      },
      required: ['file_path', 'old', 'new'],
      additionalProperties: false,
    },
  },
  arguments: z
    .object({
      file_path: pathArgument,
      old: z.string().max(REPLACE_MAX_FILE_BYTES),
      new: z.string().max(REPLACE_MAX_FILE_BYTES),
      replace_all: z.boolean().default(false),
    })
    .strict(),
  async run(args, context) {
    const { file_path: filePath, old: oldText, new: newText, replace_all: replaceAll } = args;
    if (!path.isAbsolute(filePath)) return refused(`File path must be absolute: ${quote(filePath, 300)}`);
    if (oldText === '') return refused('String to replace must not be empty');
    const files = filesOf(context);
    if (!isFiles(files)) return files;
    const limits = fileLimits(context);
    const read = await files.readText({ path: filePath, maxBytes: REPLACE_MAX_FILE_BYTES, ...limits });
    if (!read.ok) {
      if (read.code === 'FILE_TOO_LARGE') {
        return refused(`File too large to edit in place: ${read.message}`);
      }
      return refused(describeFailure(read, filePath));
    }
    const content = read.content;
    const first = content.indexOf(oldText);
    if (first === -1) return refused(`String not found in file: ${quote(filePath, 300)}`);
    // The read cap does not bound the result: replace_all multiplies the growth.
    const occurrences = replaceAll ? countOccurrences(content, oldText) : 1;
    const newBytes = Buffer.byteLength(newText, 'utf8');
    const projected = read.fileBytes + occurrences * (newBytes - Buffer.byteLength(oldText, 'utf8'));
    if (projected > REPLACE_MAX_FILE_BYTES) {
      return refused(
        `Replacement would grow ${quote(filePath, 300)} to ~${projected} bytes, over the ${REPLACE_MAX_FILE_BYTES}-byte limit (${occurrences} occurrence(s) x ${newBytes} bytes of replacement text). Narrow the match or replace in smaller steps.`,
      );
    }
    const next = replaceAll
      ? content.split(oldText).join(newText)
      : content.slice(0, first) + newText + content.slice(first + oldText.length);
    const diff = replacementDiff(content, oldText, newText, occurrences, filePath);
    const written = await files.write({
      path: filePath,
      content: next,
      expectedSha256: read.sha256,
      ...limits,
    });
    if (!written.ok) return refused(describeFailure(written, filePath));
    return done(JSON.stringify({ result: 'Replacement successful', diff }));
  },
});

const viewImage = defineTool({
  spec: {
    name: 'view_image_file',
    description: `Views the image file at the absolute path file_path. The image must be a .jpeg, .png, .gif or .webp file of at most ${IMAGE_MAX_BYTES / MiB} MiB and at most ${IMAGE_MAX_SIDE_PIXELS} pixels on each side.`,
    parameters: {
      type: 'object',
      properties: { file_path: { type: 'string', description: 'absolute path of the image file' } },
      required: ['file_path'],
      additionalProperties: false,
    },
  },
  arguments: z.object({ file_path: pathArgument }).strict(),
  async run(args, context) {
    const filePath = args.file_path;
    if (!path.isAbsolute(filePath)) return refused(`File path must be absolute: ${quote(filePath, 300)}`);
    const files = filesOf(context);
    if (!isFiles(files)) return files;
    const read = await files.readBytes({ path: filePath, maxBytes: IMAGE_MAX_BYTES, ...fileLimits(context) });
    if (!read.ok) {
      if (read.code === 'FILE_TOO_LARGE') {
        return refused(`Image is too large: ${read.message}`);
      }
      return refused(describeFailure(read, filePath));
    }
    const bytes = Buffer.from(read.dataBase64, 'base64');
    const image = await inspectImage(bytes);
    if (!image.ok) return refused(`Cannot view ${quote(filePath, 300)}: ${image.reason}`);
    if (image.width > IMAGE_MAX_SIDE_PIXELS || image.height > IMAGE_MAX_SIDE_PIXELS) {
      return refused(
        `Image is too large (${image.width}x${image.height} pixels). Please try a smaller image. Width and height of the image must be at most ${IMAGE_MAX_SIDE_PIXELS} pixels.`,
      );
    }
    return done([{ type: 'image', mediaType: image.mediaType, dataBase64: read.dataBase64 }]);
  },
});

/**
 * The `karotte` profile: `bash` exactly as the contract has it (`{command, timeoutMs?}`), and
 * the Python Karotte's `view_lines_in_file`, `replace_in_file` and `view_image_file`.
 */
export function createKarotteProfile(): ToolProfile {
  return defineProfile('karotte', [bash, viewLines, replaceInFile, viewImage]);
}
