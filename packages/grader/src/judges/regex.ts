import { Worker } from 'node:worker_threads';
import { BadArgumentError, escapeForDisplay, MiB, parseOptions } from '@karotte/base';
import { z } from 'zod';
import { errorReport, failedReport, IN_PROCESS_CONFINEMENT, scoredReport } from '../judge.js';
import type { Judge, JudgeContext } from '../judge.js';
import type { Confinement, JudgeReport } from '../verdict.js';

const patternSchema = z.union([
  z.instanceof(RegExp),
  z.string(),
  z.object({ source: z.string(), flags: z.string().default('') }).strict(),
]);

export const regexJudgeOptionsSchema = z
  .object({
    /** Patterns tested against the final answer (strings are compiled without flags). */
    patterns: z.array(patternSchema).min(1),
    /**
     * `all`: every pattern must match. `any`: one is enough.
     * @default 'all'
     */
    mode: z.enum(['all', 'any']).default('all'),
    /**
     * `binary`: 1 when the mode is satisfied, else 0. `fraction`: matched / total patterns.
     * @default 'binary'
     */
    scoring: z.enum(['binary', 'fraction']).default('binary'),
    /**
     * Wall-clock limit of the match. Matching runs in a worker thread that is terminated at
     * the limit, so a pattern with catastrophic backtracking cannot hang the harness.
     * @default 1000
     */
    timeoutMs: z.number().int().positive().max(600_000).default(1000),
    /**
     * Largest final answer tested (UTF-8 bytes); a longer one fails with `INPUT_TOO_LARGE`.
     * @default 1048576 (1 MiB)
     */
    maxAnswerBytes: z.number().int().positive().default(MiB),
    /**
     * Name in reports.
     * @default 'regex'
     */
    name: z.string().min(1).default('regex'),
  })
  .strict();
export type RegexJudgeOptions = z.input<typeof regexJudgeOptionsSchema>;

/** The worker: a constant program; patterns and the answer arrive as data (workerData). */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { patterns, answer } = workerData;
parentPort.postMessage(patterns.map((p) => new RegExp(p.source, p.flags).test(answer)));
`;

const REGEX_CONFINEMENT: Confinement = {
  ...IN_PROCESS_CONFINEMENT,
  memory: 'prevented',
  wallTime: 'prevented',
};

/**
 * A judge over the student's final answer: regular expressions, matched in a worker thread
 * with a time limit and a heap limit. No final answer scores 0.
 *
 * @throws BadArgumentError on invalid options or a pattern that does not compile.
 */
export function createRegexJudge(options: RegexJudgeOptions): Judge {
  const resolved = parseOptions(regexJudgeOptionsSchema, options, 'regex judge options');
  const patterns = resolved.patterns.map((pattern, index) => {
    const source = typeof pattern === 'string' ? pattern : pattern.source;
    const flags = typeof pattern === 'string' ? '' : pattern.flags.replace(/[gy]/g, '');
    try {
      new RegExp(source, flags);
    } catch (error) {
      throw new BadArgumentError(`pattern ${index} does not compile: ${String(error)}`, {
        field: `patterns[${index}]`,
        cause: error,
      });
    }
    return { source, flags };
  });
  return {
    kind: 'regex',
    name: resolved.name,
    evaluate: async (context: JudgeContext): Promise<JudgeReport> => {
      const startedAt = performance.now();
      const base = { name: resolved.name, kind: 'regex' as const, confinement: REGEX_CONFINEMENT, startedAt };
      const answer = context.finalAnswer;
      if (answer === null) return scoredReport(base, 0, { answer: 'none' });
      const bytes = Buffer.byteLength(answer, 'utf8');
      if (bytes > resolved.maxAnswerBytes) {
        return failedReport(
          base,
          context,
          'INPUT_TOO_LARGE',
          `final answer is ${bytes} bytes, over ${resolved.maxAnswerBytes}`,
        );
      }
      const outcome = await matchInWorker(patterns, answer, resolved.timeoutMs, context.abortSignal);
      if (outcome.kind === 'aborted')
        return errorReport(base, { code: 'ABORTED', message: 'grading was cancelled' });
      if (outcome.kind === 'timeout') {
        return failedReport(
          {
            ...base,
            limitHits: [
              {
                scope: 'grader',
                limit: 'wall_time',
                limitValue: resolved.timeoutMs,
                observed: null,
                enforcement: 'prevented',
                message: `regex match ran past ${resolved.timeoutMs} ms and was terminated`,
              },
            ],
          },
          context,
          'TIMEOUT',
          `regex match ran past its ${resolved.timeoutMs} ms limit (catastrophic backtracking on the answer)`,
          { timedOut: true },
        );
      }
      if (outcome.kind === 'crashed') {
        return failedReport(
          base,
          context,
          'MEMORY_LIMIT',
          `regex worker failed: ${escapeForDisplay(outcome.message, 300)}`,
        );
      }
      const matched = outcome.matches.filter(Boolean).length;
      const satisfied = resolved.mode === 'all' ? matched === patterns.length : matched > 0;
      const score = resolved.scoring === 'binary' ? (satisfied ? 1 : 0) : matched / patterns.length;
      return scoredReport(base, score, {
        matched: patterns
          .filter((_, i) => outcome.matches[i])
          .map((p) => escapeForDisplay(`/${p.source}/${p.flags}`)),
        missing: patterns
          .filter((_, i) => !outcome.matches[i])
          .map((p) => escapeForDisplay(`/${p.source}/${p.flags}`)),
      });
    },
  };
}

type MatchOutcome =
  | { kind: 'matched'; matches: boolean[] }
  | { kind: 'timeout' }
  | { kind: 'aborted' }
  | { kind: 'crashed'; message: string };

function matchInWorker(
  patterns: readonly { source: string; flags: string }[],
  answer: string,
  timeoutMs: number,
  abortSignal: AbortSignal,
): Promise<MatchOutcome> {
  return new Promise((resolve) => {
    const worker = new Worker(WORKER, {
      eval: true,
      workerData: { patterns, answer },
      env: {},
      resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const settle = (outcome: MatchOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      abortSignal.removeEventListener('abort', onAbort);
      // terminate() stops a worker even in the middle of a regex match.
      void worker.terminate();
      resolve(outcome);
    };
    const timer = setTimeout(() => {
      settle({ kind: 'timeout' });
    }, timeoutMs);
    const onAbort = (): void => {
      settle({ kind: 'aborted' });
    };
    abortSignal.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (matches: boolean[]) => {
      settle({ kind: 'matched', matches });
    });
    worker.once('error', (error) => {
      settle({ kind: 'crashed', message: error.message });
    });
    worker.once('exit', (code) => {
      settle({ kind: 'crashed', message: `worker exited with code ${code}` });
    });
  });
}
