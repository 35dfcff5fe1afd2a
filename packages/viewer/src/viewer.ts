import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { parseOptions } from '@karotte/base';
import { z } from 'zod';
import { ViewerError } from './errors.js';

/** Options of {@link runViewer}: strict, so a misspelled key fails instead of vanishing. */
export const viewerOptionsSchema = z
  .object({
    /**
     * How long the work may take, in milliseconds.
     * @default 10000
     */
    timeoutMs: z.number().int().positive().max(86_400_000).default(10_000),
    /** Cancels the work; it then throws `ABORTED`. */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

export type ViewerOptions = z.input<typeof viewerOptionsSchema>;

/** What {@link runViewer} found: an outcome is data, with its reason, not an exception. */
export interface ViewerResult {
  /** True when the work was done within its limits. */
  readonly ok: boolean;
  /** Why `ok` is false (a limit hit, a refusal); null when it is true. */
  readonly reason: string | null;
  /** The limit that applied, as validated. */
  readonly timeoutMs: number;
  /** Wall time of the call, in milliseconds. */
  readonly durationMs: number;
}

/**
 * The primitive's entry point (replace it with yours). Validates its options once, strictly, and
 * returns what happened as data.
 *
 * @throws BadArgumentError on invalid options, naming the field.
 * @throws ViewerError `ABORTED` when `abortSignal` fires first.
 */
export async function runViewer(options: ViewerOptions = {}): Promise<ViewerResult> {
  const parsed = parseOptions(viewerOptionsSchema, options, 'viewer options');
  const started = performance.now();
  try {
    // The primitive's work goes here; every wait honours the caller's signal.
    await yieldToEventLoop(undefined, parsed.abortSignal === undefined ? {} : { signal: parsed.abortSignal });
  } catch (error) {
    // A foreign error (here the AbortError of node:timers) never leaves a public API unwrapped.
    throw new ViewerError('ABORTED', 'cancelled before the work was done', { cause: error });
  }
  return {
    ok: true,
    reason: null,
    timeoutMs: parsed.timeoutMs,
    durationMs: Math.round(performance.now() - started),
  };
}
