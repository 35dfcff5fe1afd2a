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
  /** errno (ENOENT, EACCES, EISDIR, …) or NOT_REGULAR_FILE, NOT_TEXT, NOT_FOUND, AMBIGUOUS, FILE_TOO_LARGE, TIMED_OUT, OUTPUT_TOO_LARGE. */
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
export type WriteResult = Omit<z.infer<typeof writeSchema>, 'op'>;
export type ReplaceResult = Omit<z.infer<typeof replaceSchema>, 'op'>;
export type ListResult = Omit<z.infer<typeof listSchema>, 'op'>;

const pathSchema = z
  .string()
  .min(1)
  .max(4096)
  .refine((value) => !value.includes('\0'), 'must not contain NUL');
const timeoutSchema = z.number().int().positive().max(600_000);

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
    /** @default 30000 */
    timeoutMs: timeoutSchema.default(30_000),
  })
  .strict();
export type ViewOptions = z.input<typeof viewOptionsSchema>;

/** Options of {@link SandboxFiles.write}. */
export const writeOptionsSchema = z
  .object({
    path: pathSchema,
    content: z.string().max(64 * MiB),
    /** Create missing parent directories. @default false */
    createParents: z.boolean().default(false),
    /** @default 30000 */
    timeoutMs: timeoutSchema.default(30_000),
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
  })
  .strict();
export type ReplaceOptions = z.input<typeof replaceOptionsSchema>;

/** Options of {@link SandboxFiles.list}. */
export const listOptionsSchema = z
  .object({
    /** @default '.' (the working directory) */
    path: pathSchema.default('.'),
    /** @default 1000 */
    maxEntries: z.number().int().positive().max(100_000).default(1000),
    /** @default 30000 */
    timeoutMs: timeoutSchema.default(30_000),
  })
  .strict();
export type ListOptions = z.input<typeof listOptionsSchema>;

/** File tools that act with the student's rights, inside the sandbox. Outcomes are data. */
export interface SandboxFiles {
  view(options: ViewOptions): Promise<ViewResult | FileToolFailure>;
  write(options: WriteOptions): Promise<WriteResult | FileToolFailure>;
  replace(options: ReplaceOptions): Promise<ReplaceResult | FileToolFailure>;
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
}

/** Build the file tools of one sandbox. */
export function createFileTools(context: FileToolContext): SandboxFiles {
  const call = async <T extends z.ZodType>(
    request: Record<string, unknown>,
    schema: T,
    timeoutMs: number,
    maxStdoutBytes: number,
  ): Promise<z.infer<T> | FileToolFailure> => {
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
            context.node,
            '-e',
            FILE_TOOL_SCRIPT,
          ],
          stdin: JSON.stringify(request),
          timeoutMs,
          maxStdoutBytes,
        });
      } catch (error) {
        if (!(error instanceof WorldGoneError)) throw error;
        if (attempt >= 2) {
          return { ok: false, code: 'EIO', message: 'the sandbox restarted during the file operation' };
        }
      }
    }
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
          scanBytes: 64 * MiB,
        },
        viewSchema,
        parsed.timeoutMs,
        parsed.maxBytes * 6 + 64 * KiB,
      );
      return strip(result);
    },
    async write(options) {
      const parsed = parseOptions(writeOptionsSchema, options, 'write options');
      return strip(
        await call(
          { op: 'write', path: parsed.path, content: parsed.content, createParents: parsed.createParents },
          writeSchema,
          parsed.timeoutMs,
          64 * KiB,
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
          parsed.timeoutMs,
          64 * KiB,
        ),
      );
    },
    async list(options = {}) {
      const parsed = parseOptions(listOptionsSchema, options, 'list options');
      return strip(
        await call(
          { op: 'list', path: parsed.path, maxEntries: parsed.maxEntries },
          listSchema,
          parsed.timeoutMs,
          parsed.maxEntries * 8 * KiB + 64 * KiB,
        ),
      );
    },
  };
}
