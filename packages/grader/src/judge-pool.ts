// A warm pool of prepared judges: each judge's setup (the executable judge's private
// directory, uid, cgroup, program copy, namespaces and mounts, its world started) made
// ahead, in the background, so an episode's grading starts at the grader's own run. What is
// pooled is fresh and unused: a prepared judge serves one evaluation and is never reused.
import { parseOptions } from '@karotte/base';
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

interface Pooled {
  readonly prepared: PreparedJudge;
  readonly madeAt: number;
}

interface Reserve {
  readonly idle: Pooled[];
  filling: Promise<void> | undefined;
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
  const reserves = new Map<Judge, Reserve>();
  const background = new Set<Promise<unknown>>();
  const counts = { made: 0, warm: 0, cold: 0, discarded: 0, failed: 0 };
  let closed = false;
  let closing: Promise<void> | undefined;

  const track = (promise: Promise<unknown>): void => {
    background.add(promise);
    const forget = (): void => {
      background.delete(promise);
    };
    promise.then(forget, forget);
  };
  const release = (entry: Pooled): void => {
    track(entry.prepared.dispose());
  };
  const discard = (entry: Pooled): void => {
    counts.discarded += 1;
    release(entry);
  };
  const fill = (judge: Judge, reserve: Reserve): void => {
    if (closed || reserve.filling !== undefined || reserve.idle.length >= size) return;
    reserve.filling = (async () => {
      try {
        while (!closed && reserves.get(judge) === reserve && reserve.idle.length < size) {
          const prepared = await prepareJudge(judge, { abortSignal: lifetime.signal, maxAgeMs });
          if (prepared === null) return;
          counts.made += 1;
          const entry = { prepared, madeAt: performance.now() };
          if (closed || reserves.get(judge) !== reserve) {
            release(entry);
            return;
          }
          reserve.idle.push(entry);
        }
      } catch {
        if (!closed) counts.failed += 1;
      } finally {
        reserve.filling = undefined;
      }
    })();
    track(reserve.filling);
  };
  const reserveOf = (judge: Judge): Reserve => {
    let reserve = reserves.get(judge);
    if (reserve === undefined) {
      reserve = { idle: [], filling: undefined };
      while (reserves.size >= maxJudges) {
        const [oldest, stale] = reserves.entries().next().value as [Judge, Reserve];
        reserves.delete(oldest);
        for (const entry of stale.idle.splice(0)) release(entry);
      }
    } else reserves.delete(judge);
    reserves.set(judge, reserve); // most recently used last
    return reserve;
  };
  // Stale ones go even while nobody asks: a pool left idle must not hold old worlds.
  const sweep = setInterval(
    () => {
      const now = performance.now();
      for (const reserve of reserves.values()) {
        for (let i = reserve.idle.length - 1; i >= 0; i -= 1) {
          const entry = reserve.idle[i]!;
          if (now - entry.madeAt > maxAgeMs || !entry.prepared.usable())
            discard(reserve.idle.splice(i, 1)[0]!);
        }
      }
    },
    Math.max(1_000, Math.floor(maxAgeMs / 4)),
  );
  sweep.unref();

  return {
    async prepare(judge, prepareOptions = {}) {
      if (closed) throw new GraderError('ABORTED', 'the judge pool was closed');
      if (typeof judge.prepare !== 'function') return null;
      const reserve = reserveOf(judge);
      for (;;) {
        const entry = reserve.idle.shift();
        if (entry === undefined) break;
        if (performance.now() - entry.madeAt > maxAgeMs || !entry.prepared.usable()) {
          discard(entry);
          continue;
        }
        counts.warm += 1;
        fill(judge, reserve);
        return entry.prepared;
      }
      counts.cold += 1;
      const signal =
        prepareOptions.abortSignal === undefined
          ? lifetime.signal
          : AbortSignal.any([prepareOptions.abortSignal, lifetime.signal]);
      const prepared = prepareJudge(judge, { abortSignal: signal, maxAgeMs });
      // The replacement starts once this one is made: two at once would only share the cores.
      track(
        prepared.then(
          () => {
            fill(judge, reserve);
          },
          () => undefined,
        ),
      );
      return prepared;
    },
    stats() {
      let idle = 0;
      for (const reserve of reserves.values()) idle += reserve.idle.length;
      return { ...counts, idle };
    },
    close() {
      closing ??= (async () => {
        closed = true;
        clearInterval(sweep);
        lifetime.abort(new GraderError('ABORTED', 'the judge pool was closed'));
        for (const reserve of reserves.values()) for (const entry of reserve.idle.splice(0)) release(entry);
        reserves.clear();
        while (background.size > 0) await Promise.allSettled([...background]);
      })();
      return closing;
    },
  };
}
