import type { z } from 'zod';
import { BadArgumentError } from '../errors.js';
import { parseOptions } from '../options.js';
import { readBounded } from './bounded-read.js';
import type { BoundedReadRefusal } from './bounded-read.js';
import { parseJsonStrict } from './json.js';

/** Why {@link readJsonFile} refused a file: a read refusal, bad JSON, or a shape the schema rejects. */
export type JsonFileRefusal = BoundedReadRefusal | 'invalid_json' | 'invalid_shape';

export type JsonFileResult<T> =
  | { ok: true; value: T }
  | {
      ok: false;
      refusal: JsonFileRefusal;
      /** What is wrong, naming `what` (and, for `invalid_shape`, every offending field). */
      message: string;
      /** Dotted path of the first offending field (`limits.memoryBytes`), for `invalid_shape`. */
      field?: string;
      /** The underlying error (the schema's `BadArgumentError`), when there is one. */
      cause?: unknown;
    };

export interface ReadJsonFileOptions<Schema extends z.ZodType> {
  /** Largest file accepted, in bytes; a bigger one is refused before it is read. */
  readonly maxBytes: number;
  /** The strict zod schema the parsed value must satisfy. */
  readonly schema: Schema;
  /**
   * How messages name the file (`task.json`, `replay file`).
   * @default the file's path
   */
  readonly what?: string;
  /**
   * Deepest nesting of arrays and objects accepted.
   * @default 64
   */
  readonly maxDepth?: number;
}

/**
 * Read a JSON file a user or task author wrote, once and carefully: no symlink (the last
 * component is opened with O_NOFOLLOW, which is the race-free form of an lstat check), a
 * regular file only (fstat of the open fd), at most `maxBytes` (refused before reading, and
 * the read stops at the bound even if the file grows), strict UTF-8, strict JSON (no duplicate
 * keys, no number that overflows to `Infinity`, bounded depth: {@link parseJsonStrict}), then
 * the zod `schema` (through `parseOptions`, so messages name the field).
 *
 * Every problem a writer of the file can cause is a refusal in the result; a host fault (EIO,
 * EMFILE) throws a `SystemError`.
 */
export async function readJsonFile<Schema extends z.ZodType>(
  filePath: string,
  options: ReadJsonFileOptions<Schema>,
): Promise<JsonFileResult<z.output<Schema>>> {
  const what = options.what ?? filePath;
  const read = await readBounded(filePath, options.maxBytes);
  if (!read.ok) return { ok: false, refusal: read.refusal, message: `${what}: ${read.message}` };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(read.bytes);
  } catch (error) {
    return { ok: false, refusal: 'invalid_json', message: `${what} is not valid UTF-8`, cause: error };
  }
  const parsed = parseJsonStrict(text, {
    maxDepth: options.maxDepth ?? 64,
    maxStringLength: options.maxBytes,
  });
  if (!parsed.ok)
    return { ok: false, refusal: 'invalid_json', message: `${what} is not valid JSON: ${parsed.reason}` };
  try {
    return { ok: true, value: parseOptions(options.schema, parsed.value, what) };
  } catch (error) {
    if (!BadArgumentError.isInstance(error)) throw error;
    return {
      ok: false,
      refusal: 'invalid_shape',
      message: error.message,
      ...(error.field === undefined ? {} : { field: error.field }),
      cause: error,
    };
  }
}
