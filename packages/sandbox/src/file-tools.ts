import { z } from 'zod';
import { BadArgumentError, MiB, KiB, parseOptions } from '@karotte/base';
import { runInside, type InsideOutput } from './confinement/run.js';
import fileToolScript from './programs/file-tool.cjs?raw';
import { WorldGoneError, type World } from './confinement/world.js';

/**
 * The file tools' program (programs/file-tool.cjs), run by Node as the student inside the
 * sandbox: every open happens with the student's uid in the student's mount namespace, so a
 * planted link or a mode trick can only ever reach what the student could reach itself. Opens are O_NONBLOCK|O_NOCTTY and
 * the opened descriptor must be a regular file, so a FIFO or a device never blocks or floods.
 * Request on stdin (JSON), one JSON response on stdout.
 */
const FILE_TOOL_SCRIPT: string = fileToolScript;

/** A refused or failed file operation: an outcome for the student, not an exception. */
export interface FileToolFailure {
  readonly ok: false;
  /**
   * errno (ENOENT, EACCES, EISDIR, EEXIST, …) or NOT_REGULAR_FILE, NOT_TEXT, NOT_FOUND,
   * AMBIGUOUS, FILE_TOO_LARGE, CONFLICT, TIMED_OUT, ABORTED, OUTPUT_TOO_LARGE.
   */
  readonly code: string;
  readonly message: string;
}

const failureSchema = z
  .object({ ok: z.literal(false), code: z.string().max(64), message: z.string().max(4096) })
  .strict();
const viewSchema = z
  .object({
    ok: z.literal(true),
    op: z.literal('view'),
    content: z.string(),
    startLine: z.number().int(),
    endLine: z.number().int(),
    totalLines: z.number().int().nullable(),
    truncated: z.boolean(),
    fileBytes: z.number().int(),
  })
  .strict();
const sha256Schema = z.string().regex(/^[0-9a-f]{64}$/);
const readTextSchema = z
  .object({
    ok: z.literal(true),
    op: z.literal('read'),
    content: z.string(),
    fileBytes: z.number().int(),
    sha256: sha256Schema,
  })
  .strict();
const readBytesSchema = z
  .object({
    ok: z.literal(true),
    op: z.literal('read'),
    dataBase64: z.base64(),
    fileBytes: z.number().int(),
    sha256: sha256Schema,
  })
  .strict();
const writeSchema = z
  .object({ ok: z.literal(true), op: z.literal('write'), bytes: z.number().int() })
  .strict();
const replaceSchema = z
  .object({
    ok: z.literal(true),
    op: z.literal('replace'),
    replacements: z.number().int(),
    bytes: z.number().int(),
  })
  .strict();
const deleteSchema = z.object({ ok: z.literal(true), op: z.literal('delete') }).strict();
const listSchema = z
  .object({
    ok: z.literal(true),
    op: z.literal('list'),
    entries: z.array(
      z
        .object({
          name: z.string(),
          type: z.enum(['file', 'directory', 'symlink', 'other']),
          size: z.number().int().nullable(),
        })
        .strict(),
    ),
    truncated: z.boolean(),
  })
  .strict();

export type ViewResult = Omit<z.infer<typeof viewSchema>, 'op'>;
/** What {@link SandboxFiles.readText} read: the whole file as text, and its SHA-256 (hex). */
type ReadTextResult = Omit<z.infer<typeof readTextSchema>, 'op'>;
/** What {@link SandboxFiles.readBytes} read: the whole file, base64, and its SHA-256 (hex). */
type ReadBytesResult = Omit<z.infer<typeof readBytesSchema>, 'op'>;
export type WriteResult = Omit<z.infer<typeof writeSchema>, 'op'>;
export type ReplaceResult = Omit<z.infer<typeof replaceSchema>, 'op'>;
/** A file {@link SandboxFiles.delete} removed. */
type DeleteResult = Omit<z.infer<typeof deleteSchema>, 'op'>;
export type ListResult = Omit<z.infer<typeof listSchema>, 'op'>;

const pathSchema = z
  .string()
  .min(1)
  .max(4096)
  .refine((value) => !value.includes('\0'), 'must not contain NUL');
const timeoutSchema = z.number().int().positive().max(600_000);
/** Stops the operation (its program is killed); the result is then `ABORTED`. */
const abortSignalSchema = z.instanceof(AbortSignal).optional();

/** Options of {@link SandboxFiles.view}. Line numbers are 1-based and inclusive. */
export const viewOptionsSchema = z
  .object({
    /** Path as the student sees it; relative paths start at the working directory. */
    path: pathSchema,
    /** @default 1 */
    startLine: z.number().int().positive().default(1),
    /** @default startLine + 999 */
    endLine: z.number().int().positive().optional(),
    /** Most bytes of content returned. @default 256 KiB */
    maxBytes: z
      .number()
      .int()
      .positive()
      .max(16 * MiB)
      .default(256 * KiB),
    /**
     * When a line does not fit in `maxBytes`, return its head (cut at a character) instead of
     * stopping before it: a file of one giant line still shows its start. @default false
     */
    partialLine: z.boolean().default(false),
    /** @default 30000 */
    timeoutMs: timeoutSchema.default(30_000),
    abortSignal: abortSignalSchema,
  })
  .strict();
export type ViewOptions = z.input<typeof viewOptionsSchema>;

/** Options of {@link SandboxFiles.readText}. */
const readTextOptionsSchema = z
  .object({
    path: pathSchema,
    /** Largest file read; a larger one is FILE_TOO_LARGE (by its size, then by a capped read). @default 10 MiB */
    maxBytes: z
      .number()
      .int()
      .positive()
      .max(64 * MiB)
      .default(10 * MiB),
    /** @default 30000 */
    timeoutMs: timeoutSchema.default(30_000),
    abortSignal: abortSignalSchema,
  })
  .strict();
type ReadTextOptions = z.input<typeof readTextOptionsSchema>;

/** Options of {@link SandboxFiles.readBytes}. */
const readBytesOptionsSchema = z
  .object({
    path: pathSchema,
    /** Largest file read. @default 5 MiB */
    maxBytes: z
      .number()
      .int()
      .positive()
      .max(32 * MiB)
      .default(5 * MiB),
    /** @default 30000 */
    timeoutMs: timeoutSchema.default(30_000),
    abortSignal: abortSignalSchema,
  })
  .strict();
type ReadBytesOptions = z.input<typeof readBytesOptionsSchema>;

/** Options of {@link SandboxFiles.write}. */
export const writeOptionsSchema = z
  .object({
    path: pathSchema,
    content: z.string().max(64 * MiB),
    /** Create missing parent directories. @default false */
    createParents: z.boolean().default(false),
    /** Refuse (EEXIST) when anything is at the path already, a dangling link included. @default false */
    createOnly: z.boolean().default(false),
    /**
     * Write only if the file exists and its bytes still have this SHA-256 (hex, as
     * {@link SandboxFiles.readText} gave it), else CONFLICT and nothing is written: an edit
     * computed from a read never overwrites a change made in between.
     */
    expectedSha256: sha256Schema.optional(),
    /** @default 30000 */
    timeoutMs: timeoutSchema.default(30_000),
    abortSignal: abortSignalSchema,
  })
  .strict();
export type WriteOptions = z.input<typeof writeOptionsSchema>;

/** Options of {@link SandboxFiles.replace}. */
export const replaceOptionsSchema = z
  .object({
    path: pathSchema,
    oldText: z
      .string()
      .min(1)
      .max(16 * MiB),
    newText: z.string().max(16 * MiB),
    /** Replace every occurrence; otherwise more than one is refused as ambiguous. @default false */
    replaceAll: z.boolean().default(false),
    /** Largest file (before and after) handled. @default 10 MiB */
    maxFileBytes: z
      .number()
      .int()
      .positive()
      .max(64 * MiB)
      .default(10 * MiB),
    /** @default 30000 */
    timeoutMs: timeoutSchema.default(30_000),
    abortSignal: abortSignalSchema,
  })
  .strict();
export type ReplaceOptions = z.input<typeof replaceOptionsSchema>;

/** Options of {@link SandboxFiles.delete}. */
const deleteOptionsSchema = z
  .object({
    /** A file, link, FIFO or socket (a link is removed itself); a directory is EISDIR. */
    path: pathSchema,
    /** @default 30000 */
    timeoutMs: timeoutSchema.default(30_000),
    abortSignal: abortSignalSchema,
  })
  .strict();
type DeleteOptions = z.input<typeof deleteOptionsSchema>;

/** Options of {@link SandboxFiles.list}. */
export const listOptionsSchema = z
  .object({
    /** @default '.' (the working directory) */
    path: pathSchema.default('.'),
    /** @default 1000 */
    maxEntries: z.number().int().positive().max(100_000).default(1000),
    /** Levels listed: 1 is the directory itself, 2 adds its subdirectories (links are never followed). @default 1 */
    depth: z.number().int().positive().max(8).default(1),
    /** List names starting with a dot. @default true */
    includeHidden: z.boolean().default(true),
    /** @default 30000 */
    timeoutMs: timeoutSchema.default(30_000),
    abortSignal: abortSignalSchema,
  })
  .strict();
export type ListOptions = z.input<typeof listOptionsSchema>;

/** How far `view` reads into a file at most (a sparse giant is never read to its end). */
const VIEW_SCAN_BYTES = 64 * MiB;

/** File tools that act with the student's rights, inside the sandbox. Outcomes are data. */
export interface SandboxFiles {
  view(options: ViewOptions): Promise<ViewResult | FileToolFailure>;
  /** The whole file as UTF-8 text (no NUL bytes), bounded by `maxBytes`. */
  readText(options: ReadTextOptions): Promise<ReadTextResult | FileToolFailure>;
  /** The whole file's bytes, base64, bounded by `maxBytes`. */
  readBytes(options: ReadBytesOptions): Promise<ReadBytesResult | FileToolFailure>;
  write(options: WriteOptions): Promise<WriteResult | FileToolFailure>;
  replace(options: ReplaceOptions): Promise<ReplaceResult | FileToolFailure>;
  /** Remove a file (never a directory). */
  delete(options: DeleteOptions): Promise<DeleteResult | FileToolFailure>;
  list(options?: ListOptions): Promise<ListResult | FileToolFailure>;
}

export interface FileToolContext {
  /** The live world (restarted first when its init died). */
  readonly world: () => Promise<World>;
  readonly uid: number;
  readonly home: string;
  readonly node: string;
  readonly envBinary: string;
  readonly env: Readonly<Record<string, string>>;
  /**
   * How the host's Node.js starts where the student's root is an image: its loader and
   * libraries bound into the image, the loader named explicitly (argv before `-e`). Undefined
   * on the host view: `node` itself.
   */
  readonly nodeInImage?: readonly string[] | undefined;
}

function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** Build the file tools of one sandbox. */
export function createFileTools(context: FileToolContext): SandboxFiles {
  const call = async <T extends z.ZodType>(
    request: Record<string, unknown>,
    schema: T,
    limits: { timeoutMs: number; maxStdoutBytes: number; abortSignal: AbortSignal | undefined },
  ): Promise<z.infer<T> | FileToolFailure> => {
    const { timeoutMs, maxStdoutBytes, abortSignal } = limits;
    const aborted: FileToolFailure = {
      ok: false,
      code: 'ABORTED',
      message: 'the file operation was cancelled',
    };
    if (isAborted(abortSignal)) return aborted;
    const env = Object.entries(context.env).map(([name, value]) => `${name}=${value}`);
    let output: InsideOutput | undefined;
    // The init may die between getting the world and entering it (out of memory): get a
    // restarted world and try again, a bounded number of times.
    for (let attempt = 0; output === undefined; attempt += 1) {
      const world = await context.world();
      try {
        output = await runInside({
          world,
          uid: context.uid,
          program: [
            context.envBinary,
            '-i',
            '-C',
            context.home,
            ...env,
            ...(context.nodeInImage ?? [context.node]),
            '-e',
            FILE_TOOL_SCRIPT,
          ],
          stdin: JSON.stringify(request),
          timeoutMs,
          maxStdoutBytes,
          abortSignal,
        });
      } catch (error) {
        if (!(error instanceof WorldGoneError)) throw error;
        if (attempt >= 2) {
          return { ok: false, code: 'EIO', message: 'the sandbox restarted during the file operation' };
        }
      }
    }
    // Checked again after the run: a cancelled program ends with no answer of its own.
    if (isAborted(abortSignal)) return aborted;
    if (output.timedOut)
      return { ok: false, code: 'TIMED_OUT', message: `the file operation took longer than ${timeoutMs} ms` };
    if (output.overflow)
      return { ok: false, code: 'OUTPUT_TOO_LARGE', message: 'the file operation produced too much output' };
    let parsed: unknown;
    try {
      // eslint-disable-next-line no-restricted-syntax -- bounded output, validated by the schemas below
      parsed = JSON.parse(output.stdout.toString('utf8'));
    } catch {
      return {
        ok: false,
        code: 'EIO',
        message: `the file tool failed: ${output.stderr.slice(0, 500) || `exit ${String(output.exitCode ?? output.signal)}`}`,
      };
    }
    const failure = failureSchema.safeParse(parsed);
    if (failure.success) return failure.data;
    const success = schema.safeParse(parsed);
    if (!success.success)
      return { ok: false, code: 'EIO', message: 'the file tool answered something unexpected' };
    return success.data;
  };
  const strip = <T extends { ok: true; op: string }>(
    value: T | FileToolFailure,
  ): Omit<T, 'op'> | FileToolFailure => {
    if (!value.ok) return value;
    const rest: Partial<T> = { ...value };
    delete rest.op;
    return rest as Omit<T, 'op'>;
  };
  return {
    async view(options) {
      const parsed = parseOptions(viewOptionsSchema, options, 'view options');
      const endLine = parsed.endLine ?? parsed.startLine + 999;
      if (endLine < parsed.startLine)
        throw new BadArgumentError('endLine must be at least startLine', { field: 'endLine' });
      const result = await call(
        {
          op: 'view',
          path: parsed.path,
          startLine: parsed.startLine,
          endLine,
          maxBytes: parsed.maxBytes,
          partialLine: parsed.partialLine,
          scanBytes: VIEW_SCAN_BYTES,
        },
        viewSchema,
        // JSON escapes a control byte as six characters.
        {
          timeoutMs: parsed.timeoutMs,
          maxStdoutBytes: parsed.maxBytes * 6 + 64 * KiB,
          abortSignal: parsed.abortSignal,
        },
      );
      return strip(result);
    },
    async readText(options) {
      const parsed = parseOptions(readTextOptionsSchema, options, 'readText options');
      return strip(
        await call(
          { op: 'read', path: parsed.path, maxBytes: parsed.maxBytes, encoding: 'utf8' },
          readTextSchema,
          {
            timeoutMs: parsed.timeoutMs,
            maxStdoutBytes: parsed.maxBytes * 6 + 64 * KiB,
            abortSignal: parsed.abortSignal,
          },
        ),
      );
    },
    async readBytes(options) {
      const parsed = parseOptions(readBytesOptionsSchema, options, 'readBytes options');
      return strip(
        await call(
          { op: 'read', path: parsed.path, maxBytes: parsed.maxBytes, encoding: 'base64' },
          readBytesSchema,
          {
            timeoutMs: parsed.timeoutMs,
            maxStdoutBytes: Math.ceil(parsed.maxBytes / 3) * 4 + 64 * KiB,
            abortSignal: parsed.abortSignal,
          },
        ),
      );
    },
    async write(options) {
      const parsed = parseOptions(writeOptionsSchema, options, 'write options');
      if (parsed.createOnly && parsed.expectedSha256 !== undefined)
        throw new BadArgumentError('createOnly and expectedSha256 exclude each other', {
          field: 'expectedSha256',
        });
      return strip(
        await call(
          {
            op: 'write',
            path: parsed.path,
            content: parsed.content,
            createParents: parsed.createParents,
            createOnly: parsed.createOnly,
            ...(parsed.expectedSha256 === undefined
              ? {}
              : { expectedSha256: parsed.expectedSha256, compareBytes: 64 * MiB }),
          },
          writeSchema,
          { timeoutMs: parsed.timeoutMs, maxStdoutBytes: 64 * KiB, abortSignal: parsed.abortSignal },
        ),
      );
    },
    async replace(options) {
      const parsed = parseOptions(replaceOptionsSchema, options, 'replace options');
      return strip(
        await call(
          {
            op: 'replace',
            path: parsed.path,
            oldText: parsed.oldText,
            newText: parsed.newText,
            replaceAll: parsed.replaceAll,
            maxFileBytes: parsed.maxFileBytes,
          },
          replaceSchema,
          { timeoutMs: parsed.timeoutMs, maxStdoutBytes: 64 * KiB, abortSignal: parsed.abortSignal },
        ),
      );
    },
    async delete(options) {
      const parsed = parseOptions(deleteOptionsSchema, options, 'delete options');
      return strip(
        await call({ op: 'delete', path: parsed.path }, deleteSchema, {
          timeoutMs: parsed.timeoutMs,
          maxStdoutBytes: 64 * KiB,
          abortSignal: parsed.abortSignal,
        }),
      );
    },
    async list(options = {}) {
      const parsed = parseOptions(listOptionsSchema, options, 'list options');
      return strip(
        await call(
          {
            op: 'list',
            path: parsed.path,
            maxEntries: parsed.maxEntries,
            depth: parsed.depth,
            includeHidden: parsed.includeHidden,
          },
          listSchema,
          {
            timeoutMs: parsed.timeoutMs,
            maxStdoutBytes: parsed.maxEntries * 8 * KiB + 64 * KiB,
            abortSignal: parsed.abortSignal,
          },
        ),
      );
    },
  };
}
