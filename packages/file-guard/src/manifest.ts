import { misbehaviorRecordSchema } from '@karotte/base';
import { z } from 'zod';

const count = z.number().int().nonnegative();

/** One entry taken into custody. */
export const custodyEntrySchema = z
  .object({
    /** Relative path, escaped for display (newlines, controls and invalid UTF-8 made visible). */
    path: z.string(),
    /** The exact relative path bytes, base64: the name of the copy in the destination. */
    rawPath: z.string(),
    kind: z.enum(['file', 'directory', 'symlink']),
    /** Apparent size in bytes (files). */
    size: count.optional(),
    /** Hex SHA-256 of the content (files). */
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    /** The copy keeps holes (at least one all-zero 1 MiB chunk was skipped). */
    sparse: z.boolean().optional(),
    /**
     * Detected type (files): by magic number (file-type) for every file that is not text and
     * for every file under a task's type rule; text without a rule is `text/plain`.
     */
    type: z.object({ mime: z.string(), ext: z.string().nullable(), text: z.boolean() }).strict().optional(),
    /** Link text, escaped (symbolic links, only when a task allows them). */
    linkTarget: z.string().optional(),
  })
  .strict();

/** What happened to one declared path. */
const custodySourceStatusSchema = z
  .object({
    /** The declared path as given by the task. */
    path: z.string(),
    /** `copied`, `absent` (never created: the grader decides), `refused`, or `skipped` after a global budget overrun. */
    status: z.enum(['copied', 'absent', 'refused', 'skipped']),
    kind: z.enum(['file', 'directory']).optional(),
  })
  .strict();

/**
 * The custody manifest: what the grader's verdict can cite. JSON-serialisable; every
 * student-controlled string in it is escaped.
 */
export const custodyManifestSchema = z
  .object({
    version: z.literal(1),
    /** True when nothing was refused and the copy exists. */
    ok: z.boolean(),
    /** The root the sources were read from. */
    root: z.string(),
    /** The custody directory, or null when the custody failed (and nothing was kept). */
    destination: z.string().nullable(),
    startedAt: z.string(),
    durationMs: z.number().nonnegative(),
    budgets: z
      .object({
        maxFileBytes: count,
        maxTotalBytes: count,
        maxEntries: count,
        maxDepth: count,
        maxNameBytes: count,
        maxPathBytes: count,
      })
      .strict(),
    totals: z
      .object({ files: count, directories: count, symlinks: count, entries: count, bytes: count })
      .strict(),
    sources: z.array(custodySourceStatusSchema),
    /** Every entry copied, sorted by raw path. Empty when the custody failed. */
    entries: z.array(custodyEntrySchema),
    /** Every refusal, as a misbehavior record (code, reason, escaped path). */
    refusals: z.array(misbehaviorRecordSchema),
    /** Declared paths that do not exist. */
    absent: z.array(z.string()),
  })
  .strict();

export type CustodyEntry = z.infer<typeof custodyEntrySchema>;
export type CustodySourceStatus = z.infer<typeof custodySourceStatusSchema>;
export type CustodyManifest = z.infer<typeof custodyManifestSchema>;
