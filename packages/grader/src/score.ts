import { escapeForDisplay, jsonDepth, KiB, parseJsonStrict, parseOptions, readBounded } from '@karotte/base';
import { z } from 'zod';
import type { JsonValue } from '@karotte/base';
import type { GraderFailureReason } from './verdict.js';

/** Bounds of the score channel. */
export const scoreLimitsSchema = z
  .object({
    /**
     * Largest metadata, as UTF-8 JSON text.
     * @default 65536 (64 KiB)
     */
    maxMetadataBytes: z
      .number()
      .int()
      .positive()
      .max(16 * 1024 * KiB)
      .default(64 * KiB),
    /**
     * Deepest metadata nesting (the metadata object itself is depth 1).
     * @default 8
     */
    maxMetadataDepth: z.number().int().min(1).max(64).default(8),
  })
  .strict();
export type ScoreLimits = z.input<typeof scoreLimitsSchema>;

/** The score file's shape after strict JSON parsing. */
export const scoreFileSchema = z
  .object({
    score: z.number().min(0).max(1),
    metadata: z.record(z.string(), z.json()).optional(),
  })
  .strict();

export type ScoreParseResult =
  | { ok: true; score: number; metadata: Record<string, JsonValue> }
  | { ok: false; reason: GraderFailureReason; message: string };

/** Bytes read from a score file at most: the metadata bound plus room for the score itself. */
export function maxScoreFileBytes(limits: ScoreLimits = {}): number {
  const { maxMetadataBytes } = parseOptions(scoreLimitsSchema, limits, 'score limits');
  return maxMetadataBytes + 4 * KiB;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parse the bytes of a score file strictly: valid UTF-8, strict JSON (no NaN, no duplicate
 * keys, no number that overflows to Infinity), exactly `{"score": finite number in [0,1],
 * "metadata"?: object}`, metadata within the byte and depth bounds. Every string in the
 * metadata (keys and values) is escaped with `escapeForDisplay`. Never throws for bad input.
 */
export function parseScoreBytes(bytes: Uint8Array, limits: ScoreLimits = {}): ScoreParseResult {
  const { maxMetadataBytes, maxMetadataDepth } = parseOptions(scoreLimitsSchema, limits, 'score limits');
  if (bytes.length > maxMetadataBytes + 4 * KiB) {
    return {
      ok: false,
      reason: 'SCORE_FILE_TOO_LARGE',
      message: `score file is over ${maxMetadataBytes + 4 * KiB} bytes`,
    };
  }
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return { ok: false, reason: 'SCORE_NOT_UTF8', message: 'score file is not valid UTF-8' };
  }
  // Depth: the score object is depth 1, so metadata may reach 1 + maxMetadataDepth.
  const parsed = parseJsonStrict(text, { maxDepth: maxMetadataDepth + 1, maxStringLength: maxMetadataBytes });
  if (!parsed.ok) {
    const reason: GraderFailureReason = parsed.reason.startsWith('nesting deeper')
      ? 'METADATA_TOO_DEEP'
      : parsed.reason.startsWith('string too long')
        ? 'METADATA_TOO_LARGE'
        : 'SCORE_NOT_JSON';
    return {
      ok: false,
      reason,
      message: `score file is not strict JSON: ${escapeForDisplay(parsed.reason)}`,
    };
  }
  const checked = scoreFileSchema.safeParse(parsed.value);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const where = issue === undefined ? '' : issue.path.map(String).join('.') || '(root)';
    return {
      ok: false,
      reason: 'SCORE_INVALID',
      message: escapeForDisplay(
        `score file must be {"score": finite number in [0,1], "metadata"?: object}: ${where}: ${issue?.message ?? 'invalid'}`,
      ),
    };
  }
  const metadata = (checked.data.metadata ?? {}) as Record<string, JsonValue>;
  const depth = jsonDepth(metadata);
  if (depth > maxMetadataDepth) {
    return {
      ok: false,
      reason: 'METADATA_TOO_DEEP',
      message: `metadata is nested ${depth} deep, over ${maxMetadataDepth}`,
    };
  }
  const size = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  if (size > maxMetadataBytes) {
    return {
      ok: false,
      reason: 'METADATA_TOO_LARGE',
      message: `metadata is ${size} bytes, over ${maxMetadataBytes}`,
    };
  }
  // -0 is a valid JSON number in range; report it as 0.
  const score = checked.data.score === 0 ? 0 : checked.data.score;
  return { ok: true, score, metadata: escapeJson(metadata, maxMetadataBytes) as Record<string, JsonValue> };
}

/**
 * Read and parse the score file at `scorePath` with a bounded, link-refusing, non-blocking
 * read. A missing, non-regular or oversized file is a grader failure, never an exception;
 * only a host fault (EIO) throws.
 */
export async function readScoreFile(scorePath: string, limits: ScoreLimits = {}): Promise<ScoreParseResult> {
  const maxBytes = maxScoreFileBytes(limits);
  const read = await readBounded(scorePath, maxBytes);
  if (!read.ok) {
    switch (read.refusal) {
      case 'missing':
        return { ok: false, reason: 'SCORE_FILE_MISSING', message: 'the grader wrote no score file' };
      case 'too_large':
        return { ok: false, reason: 'SCORE_FILE_TOO_LARGE', message: `score file ${read.message}` };
      default:
        return { ok: false, reason: 'SCORE_FILE_NOT_REGULAR', message: `score file ${read.message}` };
    }
  }
  return parseScoreBytes(read.bytes, limits);
}

/** Escape every string (keys and values) of a JSON value for display. */
export function escapeJson(value: JsonValue, maxStringLength: number): JsonValue {
  if (typeof value === 'string') return escapeForDisplay(value, maxStringLength);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => escapeJson(item, maxStringLength));
  const out: Record<string, JsonValue> = {};
  for (const [key, item] of Object.entries(value)) {
    Object.defineProperty(out, escapeForDisplay(key, 256), {
      value: escapeJson(item, maxStringLength),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}
