import { BadArgumentError, escapeForDisplay, jsonDepth, KarotteError, parseOptions } from '@karotte/base';
import { z } from 'zod';
import { errorReport, failedReport, IN_PROCESS_CONFINEMENT, scoredReport } from '../judge.js';
import type { Judge, JudgeContext } from '../judge.js';
import type { JsonValue } from '@karotte/base';
import { escapeJson, scoreFileSchema, scoreLimitsSchema } from '../score.js';
import type { JudgeReport } from '../verdict.js';

/** What a function judge returns: a bare score, or a score with metadata. */
export type FunctionJudgeResult =
  number | { readonly score: number; readonly metadata?: Record<string, unknown> };

/** The body of a function judge. It should honour `context.abortSignal`. */
export type JudgeFunction = (context: JudgeContext) => FunctionJudgeResult | Promise<FunctionJudgeResult>;

export const functionJudgeOptionsSchema = z
  .object({
    /**
     * Name in reports.
     * @default `function:<fn.name or "anonymous">`
     */
    name: z.string().min(1).optional(),
    /**
     * Wall-clock limit. The function cannot be killed (it runs in the harness): past the limit
     * its result is ignored, its `abortSignal` fires and the judge reports `TIMEOUT`.
     * @default 30000
     */
    timeoutMs: z.number().int().positive().max(86_400_000).default(30_000),
    /**
     * Bounds of the returned metadata.
     * @default { maxMetadataBytes: 65536, maxMetadataDepth: 8 }
     */
    score: scoreLimitsSchema.default({ maxMetadataBytes: 65536, maxMetadataDepth: 8 }),
  })
  .strict();
export type FunctionJudgeOptions = z.input<typeof functionJudgeOptionsSchema>;

const TIMEOUT = Symbol('timeout');

/**
 * A judge written as an in-process TypeScript function. Its result is validated like a score
 * file (finite score in [0,1], bounded, escaped metadata). A throw is a grader failure
 * (`JUDGE_THREW`, score 0), except a Karotte error of kind `system`, which is a host fault.
 *
 * Use it only for trusted code that never runs the submission: it shares the harness's
 * process, memory and privileges, and a function that blocks the event loop cannot be stopped.
 *
 * @throws BadArgumentError on invalid options.
 */
export function createFunctionJudge(fn: JudgeFunction, options: FunctionJudgeOptions = {}): Judge {
  if (typeof fn !== 'function') throw new BadArgumentError('fn must be a function', { field: 'fn' });
  const resolved = parseOptions(functionJudgeOptionsSchema, options, 'function judge options');
  const name = resolved.name ?? `function:${fn.name === '' ? 'anonymous' : fn.name}`;
  return {
    kind: 'function',
    name,
    evaluate: async (context) => {
      const startedAt = performance.now();
      const base = { name, kind: 'function' as const, confinement: IN_PROCESS_CONFINEMENT, startedAt };
      const controller = new AbortController();
      const onAbort = (): void => {
        controller.abort();
      };
      context.abortSignal.addEventListener('abort', onAbort, { once: true });
      let timer: NodeJS.Timeout | undefined;
      try {
        const timeout = new Promise<typeof TIMEOUT>((resolve) => {
          timer = setTimeout(() => {
            resolve(TIMEOUT);
          }, resolved.timeoutMs);
        });
        const outcome = await Promise.race([
          Promise.resolve()
            .then(() => fn({ ...context, abortSignal: controller.signal }))
            .then(
              (value) => ({ value }),
              (error: unknown) => ({ error }),
            ),
          timeout,
        ]);
        if (outcome === TIMEOUT) {
          controller.abort();
          return failedReport(
            { ...base, limitHits: [timeLimitHit(resolved.timeoutMs)] },
            context,
            'TIMEOUT',
            `function judge ran past its ${resolved.timeoutMs} ms limit`,
            { timedOut: true },
          );
        }
        if (context.abortSignal.aborted)
          return errorReport(base, { code: 'ABORTED', message: 'grading was cancelled' });
        if ('error' in outcome) {
          const error = outcome.error;
          if (KarotteError.isInstance(error) && error.kind === 'system') {
            return errorReport(base, { code: error.code, message: error.message });
          }
          const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
          return failedReport(base, context, 'JUDGE_THREW', `function judge threw ${message}`);
        }
        return validateResult(base, context, outcome.value, resolved.score);
      } finally {
        clearTimeout(timer);
        context.abortSignal.removeEventListener('abort', onAbort);
      }
    },
  };
}

function timeLimitHit(timeoutMs: number): JudgeReport['limitHits'][number] {
  return {
    scope: 'grader',
    limit: 'wall_time',
    limitValue: timeoutMs,
    observed: null,
    enforcement: 'detected_and_reaped',
    message: `function judge ran past its ${timeoutMs} ms limit; its result was discarded`,
  };
}

/** Validate a function's return value like a score file. */
function validateResult(
  base: Parameters<typeof scoredReport>[0],
  context: JudgeContext,
  value: unknown,
  limits: z.input<typeof scoreLimitsSchema>,
): JudgeReport {
  const { maxMetadataBytes, maxMetadataDepth } = parseOptions(scoreLimitsSchema, limits, 'score limits');
  const candidate = typeof value === 'number' ? { score: value } : value;
  const checked = scoreFileSchema.safeParse(candidate);
  if (!checked.success) {
    return failedReport(
      base,
      context,
      'JUDGE_THREW',
      `function judge returned ${escapeForDisplay(describe(value), 200)}, not {score: finite number in [0,1], metadata?: JSON object}`,
    );
  }
  const metadata = (checked.data.metadata ?? {}) as Record<string, JsonValue>;
  if (jsonDepth(metadata) > maxMetadataDepth) {
    return failedReport(
      base,
      context,
      'METADATA_TOO_DEEP',
      `metadata is nested deeper than ${maxMetadataDepth}`,
    );
  }
  const size = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  if (size > maxMetadataBytes) {
    return failedReport(
      base,
      context,
      'METADATA_TOO_LARGE',
      `metadata is ${size} bytes, over ${maxMetadataBytes}`,
    );
  }
  const score = checked.data.score === 0 ? 0 : checked.data.score;
  return scoredReport(base, score, escapeJson(metadata, maxMetadataBytes) as Record<string, JsonValue>);
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  try {
    return JSON.stringify(value) ?? typeof value;
  } catch {
    return typeof value;
  }
}
