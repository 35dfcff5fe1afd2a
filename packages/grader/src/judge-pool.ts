// A warm pool of prepared judges: each judge's setup (the executable judge's private
// directory, uid, cgroup, program copy, namespaces and mounts, its world started) made
// ahead, in the background, so an episode's grading starts at the grader's own run. What is
// pooled is fresh and unused: a prepared judge serves one evaluation and is never reused.
import { createWarmReserve, parseOptions, type WarmReserve } from '@karotte/base';
import { z } from 'zod';
import { GraderError } from './errors.js';
import { prepareJudge } from './judge.js';
import type { Judge, PreparedJudge } from './judge.js';

/** Options of {@link createJudgePool}. */
export const judgePoolOptionsSchema = z
  .object({
    /**
     * Prepared judges kept ready per judge. Each holds what its judge holds while it grades
     * (the executable judge: a uid, a cgroup, a score tmpfs, a world's PID 1).
     * @default 1
     */
    size: z.number().int().min(1).max(64).default(1),
    /**
     * A pooled prepared judge older than this is released, not handed out (and a new one made).
     * @default 600000 (10 minutes)
     */
    maxAgeMs: z.number().int().min(1_000).max(86_400_000).default(600_000),
    /** Judges kept warm at once; the one used least recently is drained past this. @default 4 */
    maxJudges: z.number().int().min(1).max(256).default(4),
  })
  .strict();

/** Options of {@link createJudgePool}. */
export type JudgePoolOptions = z.input<typeof judgePoolOptionsSchema>;

/** What a judge pool has done so far, summed over its judges. */
export interface JudgePoolStats {
  /** Prepared judges made for the pool. */
  readonly made: number;
  /** Handed out from the pool (warm). */
  readonly warm: number;
  /** Prepared on demand because none was ready (cold). */
  readonly cold: number;
  /** Pooled ones released instead of handed out: too old, or no longer usable. */
  readonly discarded: number;
  /** Background preparations that failed (the next prepare() then makes its own, and sees the error). */
  readonly failed: number;
  /** Ready now. */
  readonly idle: number;
}

/** A warm pool of prepared judges (see {@link createJudgePool}). */
export interface JudgePool {
  /**
   * A prepared `judge` (see `Judge.prepare`), the caller's to evaluate once and dispose: a
   * pooled one that still holds (unused, younger than `maxAgeMs`, its world alive), else one
   * prepared now; the pool then prepares a replacement in the background. Null for a judge
   * with nothing to prepare.
   * @throws GraderError `ABORTED` after close(); what `judge.prepare()` throws for one made now.
   */
  prepare(judge: Judge, options?: { readonly abortSignal?: AbortSignal }): Promise<PreparedJudge | null>;
  stats(): JudgePoolStats;
  /** Stop refilling and release every pooled prepared judge (the ones handed out are the callers'). Idempotent. */
  close(): Promise<void>;
}

/**
 * Keep `size` prepared copies of each judge asked for ready. A judge's reserve is made at its
 * first prepare() (which itself prepares cold) and refilled one at a time in the background.
 * Pooled judges hold ordinary grading runs: after a crash, `recoverGraderLeftovers` reclaims
 * them like a run that was grading.
 * @throws BadArgumentError for invalid options.
 */
export function createJudgePool(options: JudgePoolOptions = {}): JudgePool {
  const { size, maxAgeMs, maxJudges } = parseOptions(judgePoolOptionsSchema, options, 'judge pool options');
  const lifetime = new AbortController();
  const reserves = new Map<Judge, WarmReserve<PreparedJudge>>();
  const background = new Set<Promise<unknown>>();
  // The counts of reserves already let go (a judge drained past maxJudges).
  const retired = { made: 0, warm: 0, discarded: 0, failed: 0 };
  let cold = 0;
  let closed = false;
  let closing: Promise<void> | undefined;

  const track = (promise: Promise<unknown>): void => {
    background.add(promise);
    const forget = (): void => {
      background.delete(promise);
    };
    promise.then(forget, forget);
  };
  const retire = (reserve: WarmReserve<PreparedJudge>): void => {
    const { made, warm, discarded, failed } = reserve.stats();
    retired.made += made;
    retired.warm += warm;
    retired.discarded += discarded;
    retired.failed += failed;
    track(reserve.close());
  };
  const reserveOf = (judge: Judge): WarmReserve<PreparedJudge> => {
    let reserve = reserves.get(judge);
    if (reserve === undefined) {
      reserve = createWarmReserve<PreparedJudge>({
        size,
        maxAgeMs,
        make: async (signal) =>
          prepareJudge(judge, { abortSignal: AbortSignal.any([signal, lifetime.signal]), maxAgeMs }),
        check: (prepared) => (prepared.usable() ? [] : ['no longer usable']),
        alive: (prepared) => prepared.usable(),
        release: (prepared) => prepared.dispose(),
        // A judge nobody asks for any more is not prepared again.
        refillOnSweep: false,
      });
      while (reserves.size >= maxJudges) {
        const [oldest, stale] = reserves.entries().next().value as [Judge, WarmReserve<PreparedJudge>];
        reserves.delete(oldest);
        retire(stale);
      }
    } else reserves.delete(judge);
    reserves.set(judge, reserve); // most recently used last
    return reserve;
  };

  return {
    async prepare(judge, prepareOptions = {}) {
      if (closed) throw new GraderError('ABORTED', 'the judge pool was closed');
      if (typeof judge.prepare !== 'function') return null;
      const reserve = reserveOf(judge);
      const warm = await reserve.take();
      if (warm !== undefined) return warm;
      if (closed) throw new GraderError('ABORTED', 'the judge pool was closed');
      cold += 1;
      const signal =
        prepareOptions.abortSignal === undefined
          ? lifetime.signal
          : AbortSignal.any([prepareOptions.abortSignal, lifetime.signal]);
      const prepared = prepareJudge(judge, { abortSignal: signal, maxAgeMs });
      // The replacement starts once this one is made: two at once would only share the cores.
      track(
        prepared.then(
          () => {
            reserve.fill();
          },
          () => undefined,
        ),
      );
      return prepared;
    },
    stats() {
      const sum = { ...retired, cold, idle: 0 };
      for (const reserve of reserves.values()) {
        const { made, warm, discarded, failed, idle } = reserve.stats();
        sum.made += made;
        sum.warm += warm;
        sum.discarded += discarded;
        sum.failed += failed;
        sum.idle += idle;
      }
      return sum;
    },
    close() {
      closing ??= (async () => {
        closed = true;
        lifetime.abort(new GraderError('ABORTED', 'the judge pool was closed'));
        for (const reserve of reserves.values()) track(reserve.close());
        reserves.clear();
        while (background.size > 0) await Promise.allSettled([...background]);
      })();
      return closing;
    },
  };
}
