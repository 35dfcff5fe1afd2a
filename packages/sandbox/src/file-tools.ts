import { z } from 'zod';
import { BadArgumentError, MiB, KiB, parseOptions } from '@karotte/base';
import { runInside, type InsideOutput } from './inside.js';
import { WorldGoneError, type World } from './world.js';

/**
 * The file tools' program, run by Node as the student inside the sandbox: every open happens
 * with the student's uid in the student's mount namespace, so a planted link or a mode trick
 * can only ever reach what the student could reach itself. Opens are O_NONBLOCK|O_NOCTTY and
 * the opened descriptor must be a regular file, so a FIFO or a device never blocks or floods.
 * Request on stdin (JSON), one JSON response on stdout.
 */
const FILE_TOOL_SCRIPT = String.raw`
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const C = fs.constants;
const out = (v) => process.stdout.write(JSON.stringify(v));
const fail = (code, message) => { out({ ok: false, code, message }); process.exit(0); };
function openRegular(p, flags) {
  let fd;
  try { fd = fs.openSync(p, flags | C.O_NONBLOCK | C.O_NOCTTY, 0o644); }
  catch (e) { fail(e.code || 'EIO', e.message); }
  const st = fs.fstatSync(fd);
  if (!st.isFile()) { fs.closeSync(fd); fail('NOT_REGULAR_FILE', p + ' is not a regular file'); }
  return { fd, st };
}
function readCapped(fd, cap) {
  const parts = []; let total = 0; const buf = Buffer.alloc(64 * 1024);
  for (;;) {
    const n = fs.readSync(fd, buf, 0, buf.length, null);
    if (n === 0) break;
    total += n;
    if (total > cap) return null;
    parts.push(Buffer.from(buf.subarray(0, n)));
  }
  return Buffer.concat(parts);
}
const decoder = new TextDecoder('utf-8', { fatal: true });
function text(bytes, p) { try { return decoder.decode(bytes); } catch { fail('NOT_TEXT', p + ' is not UTF-8 text'); } }
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  const r = JSON.parse(input);
  if (r.op === 'view') {
    const { fd, st } = openRegular(r.path, C.O_RDONLY);
    const buf = Buffer.alloc(64 * 1024);
    let line = 1, kept = [], keptBytes = 0, cur = [], curBytes = 0, truncated = false, scanned = 0, lastLine = r.startLine - 1, early = false, trailing = false;
    const inRange = () => line >= r.startLine && line <= r.endLine;
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      scanned += n;
      let start = 0;
      for (let i = 0; i <= n; i++) {
        const newline = i < n && buf[i] === 10;
        if (!newline && i < n) continue;
        const end = newline ? i + 1 : n;
        if (end > start) {
          trailing = !newline;
          if (inRange() && !truncated) {
            if (keptBytes + curBytes + (end - start) > r.maxBytes) truncated = true;
            else { cur.push(Buffer.from(buf.subarray(start, end))); curBytes += end - start; }
          }
        }
        if (newline) {
          if (inRange() && !truncated) { kept.push(...cur); keptBytes += curBytes; lastLine = line; }
          cur = []; curBytes = 0; line++; trailing = false;
        }
        start = i + 1;
      }
      if (line > r.endLine && scanned >= r.scanBytes) { early = true; break; }
    }
    if (trailing && inRange() && !truncated) { kept.push(...cur); keptBytes += curBytes; lastLine = line; }
    const totalLines = early ? null : trailing ? line : line - 1;
    out({ ok: true, op: 'view', content: text(Buffer.concat(kept), r.path), startLine: r.startLine, endLine: lastLine, totalLines, truncated, fileBytes: st.size });
  } else if (r.op === 'write') {
    if (r.createParents) { try { fs.mkdirSync(path.dirname(r.path), { recursive: true }); } catch (e) { fail(e.code || 'EIO', e.message); } }
    const { fd } = openRegular(r.path, C.O_WRONLY | C.O_CREAT);
    try { fs.ftruncateSync(fd, 0); const data = Buffer.from(r.content, 'utf8'); let off = 0; while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off); fs.closeSync(fd); out({ ok: true, op: 'write', bytes: data.length }); }
    catch (e) { fail(e.code || 'EIO', e.message); }
  } else if (r.op === 'replace') {
    const { fd } = openRegular(r.path, C.O_RDWR);
    const bytes = readCapped(fd, r.maxFileBytes);
    if (bytes === null) fail('FILE_TOO_LARGE', r.path + ' is larger than ' + r.maxFileBytes + ' bytes');
    const body = text(bytes, r.path);
    let count = 0, at = -1;
    while ((at = body.indexOf(r.oldText, at + 1)) >= 0) { count++; if (r.oldText.length === 0) break; }
    if (r.oldText.length === 0) fail('INVALID', 'oldText is empty');
    if (count === 0) fail('NOT_FOUND', 'oldText was not found in ' + r.path);
    if (count > 1 && !r.replaceAll) fail('AMBIGUOUS', 'oldText occurs ' + count + ' times in ' + r.path + '; give more context or set replaceAll');
    const next = r.replaceAll ? body.split(r.oldText).join(r.newText) : body.replace(r.oldText, () => r.newText);
    const data = Buffer.from(next, 'utf8');
    if (data.length > r.maxFileBytes) fail('FILE_TOO_LARGE', 'the result would be larger than ' + r.maxFileBytes + ' bytes');
    try { fs.ftruncateSync(fd, 0); let off = 0; while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off, off); fs.closeSync(fd); }
    catch (e) { fail(e.code || 'EIO', e.message); }
    out({ ok: true, op: 'replace', replacements: r.replaceAll ? count : 1, bytes: data.length });
  } else if (r.op === 'list') {
    let dir;
    try { dir = fs.opendirSync(r.path); } catch (e) { fail(e.code || 'EIO', e.message); }
    const entries = []; let truncated = false; let d;
    while ((d = dir.readSync()) !== null) {
      if (entries.length >= r.maxEntries) { truncated = true; break; }
      let size = null; let type = 'other';
      try { const st = fs.lstatSync(path.join(r.path, d.name)); size = st.size; type = st.isFile() ? 'file' : st.isDirectory() ? 'directory' : st.isSymbolicLink() ? 'symlink' : 'other'; } catch {}
      entries.push({ name: d.name, type, size });
    }
    dir.closeSync();
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    out({ ok: true, op: 'list', entries, truncated });
  } else fail('INVALID', 'unknown op');
});
`;

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
