import path from 'node:path';
import { GiB, MiB } from '@karotte/base';
import { z } from 'zod';

/** The reference budgets of a custody copy. */
export const DEFAULT_CUSTODY_BUDGETS = Object.freeze({
  /** @default 256 MiB */
  maxFileBytes: 256 * MiB,
  /** @default 1 GiB */
  maxTotalBytes: GiB,
  /** @default 10_000 */
  maxEntries: 10_000,
  /** @default 32 */
  maxDepth: 32,
  /** @default 255 (the Linux NAME_MAX) */
  maxNameBytes: 255,
  /**
   * Longest relative path of an entry, in bytes. Leaves room under PATH_MAX (4096) for the
   * destination prefix, so the grader can open every copy by its absolute path.
   * @default 3072
   */
  maxPathBytes: 3072,
});

const MAX_UID = 4_294_967_294;

const uid = z.number().int().min(0).max(MAX_UID);
const positiveInt = z.number().int().positive();
const byteCount = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/** An absolute, normalized path without NUL (`/a/b`, never `/a/../b` or `/a/`). */
export const absolutePathSchema = z
  .string()
  .min(1)
  .refine((value) => !value.includes('\0'), 'must not contain NUL')
  .refine((value) => path.isAbsolute(value), 'must be an absolute path')
  .refine(
    (value) => path.posix.normalize(value) === value && (value === '/' || !value.endsWith('/')),
    'must be normalized (no ., .., // or trailing slash)',
  );

/** A relative path inside the root: no `..`, no `.`, no empty component, no NUL. */
const relativePathSchema = z
  .string()
  .min(1)
  .refine((value) => !value.includes('\0'), 'must not contain NUL')
  .refine((value) => !value.startsWith('/'), 'must be relative to the root')
  .refine(
    (value) =>
      value
        .replace(/\/$/, '')
        .split('/')
        .every((part) => part !== '' && part !== '.' && part !== '..'),
    'must not contain empty, . or .. components',
  );

/**
 * What a file must be: `text` (valid UTF-8 without NUL), `archive` (any of
 * {@link ARCHIVE_MIME_TYPES}), an exact MIME type (`image/png`) or a wildcard (`image/*`).
 */
const typeSelectorSchema = z
  .string()
  .regex(
    /^(text|archive|[a-z0-9][a-z0-9.+-]*\/(\*|[a-z0-9][a-z0-9.+_-]*))$/,
    'text, archive, a MIME type or type/*',
  );

/**
 * A file-type rule of a task. A file passes when it matches one `allow` selector (if any are
 * given) and no `deny` selector. Matching is by magic number (file-type) and, for `text`, by
 * content (valid UTF-8, no NUL byte).
 */
export const fileTypePolicySchema = z
  .object({
    /** The file must match at least one of these. @default undefined (anything) */
    allow: z.array(typeSelectorSchema).min(1).optional(),
    /** The file must match none of these. @default undefined (nothing refused) */
    deny: z.array(typeSelectorSchema).min(1).optional(),
  })
  .strict();

/** One declared submission path, with optional per-path rules. */
export const custodySourceSchema = z.union([
  relativePathSchema,
  z
    .object({
      /** Path relative to the root, a file or a directory. */
      path: relativePathSchema,
      /** File-type rule for this path (every file below it, for a directory). @default options.type */
      type: fileTypePolicySchema.optional(),
      /** Recreate symbolic links inside this directory. @default options.allowSymlinks */
      allowSymlinks: z.boolean().optional(),
    })
    .strict(),
]);

/** Options of {@link takeCustody}. */
export const custodyOptionsSchema = z
  .object({
    /** Absolute, normalized directory the sources are relative to (the student's working directory). */
    root: absolutePathSchema,
    /**
     * Where the copy goes: must not exist; created 0700. When omitted, a fresh
     * `karotte-custody-XXXXXX` directory under `destinationParent`.
     * @default undefined
     */
    destination: absolutePathSchema.optional(),
    /** Parent of the fresh destination. @default os.tmpdir() */
    destinationParent: absolutePathSchema.optional(),
    /**
     * The student's uid. Files it owns may have several hard links; any other file with a
     * link count above 1 is refused. Without it, every hard-linked file is refused.
     * @default undefined
     */
    studentUid: uid.optional(),
    /** @default 256 MiB */
    maxFileBytes: byteCount.default(DEFAULT_CUSTODY_BUDGETS.maxFileBytes),
    /** @default 1 GiB */
    maxTotalBytes: byteCount.default(DEFAULT_CUSTODY_BUDGETS.maxTotalBytes),
    /** Files, directories and links, the declared paths included. @default 10_000 */
    maxEntries: positiveInt.default(DEFAULT_CUSTODY_BUDGETS.maxEntries),
    /** Deepest entry below a declared path (a child of the declared directory is depth 1). @default 32 */
    maxDepth: z.number().int().nonnegative().default(DEFAULT_CUSTODY_BUDGETS.maxDepth),
    /** @default 255 */
    maxNameBytes: positiveInt.max(255).default(DEFAULT_CUSTODY_BUDGETS.maxNameBytes),
    /** @default 3072 */
    maxPathBytes: positiveInt.max(4000).default(DEFAULT_CUSTODY_BUDGETS.maxPathBytes),
    /**
     * Recreate symbolic links found inside declared directories (never followed). A link at a
     * declared path or leading to it is always refused.
     * @default false
     */
    allowSymlinks: z.boolean().default(false),
    /** File-type rule for every source without its own. @default undefined */
    type: fileTypePolicySchema.optional(),
    /** Upper bound on the whole copy (a host fault when hit: budgets bound the work). @default 600_000 */
    timeoutMs: positiveInt.default(600_000),
    /** Cancels the copy; the destination is removed. @default undefined */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

export type FileTypePolicy = z.input<typeof fileTypePolicySchema>;
export type CustodySource = z.input<typeof custodySourceSchema>;
export type CustodyOptions = z.input<typeof custodyOptionsSchema>;
export type ParsedCustodyOptions = z.output<typeof custodyOptionsSchema>;

/** Options shared by every untrusted-path operation. */
const untrustedBase = {
  /** Upper bound on the operation; a helper past it is killed and the result says `TIMED_OUT`. @default 30_000 */
  timeoutMs: positiveInt.default(30_000),
  /**
   * Perform the operation as this uid, in a helper process started with
   * `setpriv --reuid --regid --clear-groups --no-new-privs` (the harness's own node).
   * @default undefined (in this process, as the caller)
   */
  asUid: uid.optional(),
  /** Group for `asUid`. @default asUid */
  asGid: uid.optional(),
  /**
   * Follow symbolic links (only with `asUid`: the uid's own permissions then bound what a
   * link can reach). Without it a link anywhere in the path is refused.
   * @default false
   */
  followSymlinks: z.boolean().default(false),
  /**
   * A mount-namespace file (`/proc/<pid>/ns/mnt`) to enter before acting as `asUid`, so the
   * path is resolved in the student's view of the filesystem.
   * @default undefined
   */
  mountNamespace: absolutePathSchema.optional(),
  /** Cancels the operation (rejects with `ABORTED`). @default undefined */
  abortSignal: z.instanceof(AbortSignal).optional(),
};

/** Options of {@link readUntrusted}. */
export const readUntrustedOptionsSchema = z
  .object({
    /** Largest file read. @default 10 MiB */
    maxBytes: byteCount.max(1024 * MiB).default(10 * MiB),
    /** Return the first `maxBytes` of a larger file instead of refusing it. @default false */
    truncate: z.boolean().default(false),
    /** `buffer` (raw bytes) or `utf8` (refuses invalid UTF-8 with `NOT_UTF8`). @default 'buffer' */
    encoding: z.enum(['buffer', 'utf8']).default('buffer'),
    ...untrustedBase,
  })
  .strict();

/** Options of {@link writeUntrusted}. */
export const writeUntrustedOptionsSchema = z
  .object({
    /** The uid the write is performed as (required: the harness never writes student paths as root). */
    asUid: uid,
    asGid: uid.optional(),
    /**
     * `overwrite` (create or truncate), `create` (fail with `EXISTS` when present), `append`.
     * @default 'overwrite'
     */
    mode: z.enum(['overwrite', 'create', 'append']).default('overwrite'),
    /** Permission bits of a new file (the uid's umask is not applied). @default 0o644 */
    fileMode: z.number().int().min(0).max(0o777).default(0o644),
    /** Largest payload accepted. @default 10 MiB */
    maxBytes: byteCount.max(1024 * MiB).default(10 * MiB),
    /** fsync the file after writing. @default false */
    fsync: z.boolean().default(false),
    timeoutMs: untrustedBase.timeoutMs,
    followSymlinks: untrustedBase.followSymlinks,
    mountNamespace: untrustedBase.mountNamespace,
    abortSignal: untrustedBase.abortSignal,
  })
  .strict();

/** Options of {@link listUntrusted}. */
export const listUntrustedOptionsSchema = z
  .object({
    /** Most entries returned (the result says `truncated`). @default 1000 */
    maxEntries: positiveInt.max(100_000).default(1000),
    ...untrustedBase,
  })
  .strict();

/** Options of {@link statUntrusted}. */
export const statUntrustedOptionsSchema = z.object({ ...untrustedBase }).strict();

export type ReadUntrustedOptions = z.input<typeof readUntrustedOptionsSchema>;
export type WriteUntrustedOptions = z.input<typeof writeUntrustedOptionsSchema>;
export type ListUntrustedOptions = z.input<typeof listUntrustedOptionsSchema>;
export type StatUntrustedOptions = z.input<typeof statUntrustedOptionsSchema>;

/** Options of {@link reclaim}. */
export const reclaimOptionsSchema = z
  .object({
    /** Absolute directories to sweep; they themselves are never removed. A missing root is skipped. */
    roots: z.array(absolutePathSchema).min(1),
    /** Absolute paths whose subtree is kept, with the directories leading to them. @default [] */
    exclude: z.array(absolutePathSchema).default([]),
    /**
     * Descend into other mounts below a root (never into proc, sysfs, cgroup, devpts and other
     * virtual filesystems; mount points themselves are never removed).
     * @default false
     */
    crossMounts: z.boolean().default(false),
    /** Allow a uid below 1000 (system accounts). uid 0 is always refused. @default false */
    allowSystemUid: z.boolean().default(false),
    /** Give up after this long, spanning all roots; the result says `timedOut`. @default 600_000 */
    timeoutMs: positiveInt.default(600_000),
    /** Most failed paths recorded in the result (all are counted). @default 100 */
    maxReportedFailures: positiveInt.default(100),
    /** Cancels the sweep (rejects with `ABORTED`). @default undefined */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

export type ReclaimOptions = z.input<typeof reclaimOptionsSchema>;

/** Options of {@link writeFileDurably}. */
export const writeDurablyOptionsSchema = z
  .object({
    /** Permission bits of the file. @default 0o600 */
    mode: z.number().int().min(0).max(0o7777).default(0o600),
    /** Create missing parent directories (0700), each fsynced into its parent. @default true */
    createParents: z.boolean().default(true),
  })
  .strict();

/** Options of {@link openDurableLog}. */
export const durableLogOptionsSchema = z
  .object({
    /** Permission bits of a new log file. @default 0o600 */
    mode: z.number().int().min(0).max(0o7777).default(0o600),
    /** fdatasync after every appended line. @default true */
    syncEveryLine: z.boolean().default(true),
    /** Create missing parent directories (0700). @default true */
    createParents: z.boolean().default(true),
  })
  .strict();

export type WriteDurablyOptions = z.input<typeof writeDurablyOptionsSchema>;
export type DurableLogOptions = z.input<typeof durableLogOptionsSchema>;
