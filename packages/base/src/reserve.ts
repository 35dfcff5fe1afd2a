// A warm reserve: things made ahead of their use (a sandbox, a judge's grading world), kept
// fresh, handed out once each. The pools of @karotte/sandbox and @karotte/grader are built on it.

/** How a {@link WarmReserve} makes, checks and lets go of what it keeps. */
export interface WarmReserveOptions<T> {
  /** How many to keep ready. */
  readonly size: number;
  /** Older than this (from when it was made), one is let go instead of handed out. */
  readonly maxAgeMs: number;
  /**
   * Makes one, in the background; `signal` aborts when the reserve closes. Null: there is
   * nothing to keep (filling stops until the next `fill()`). A throw is counted in `failed`.
   */
  readonly make: (signal: AbortSignal) => Promise<T | null>;
  /**
   * Why a kept one may not be handed out now (nothing: it may), asked at `take()`. A throw counts
   * as a problem.
   */
  readonly check: (item: T) => Promise<readonly string[]> | readonly string[];
  /** Whether a kept one is still whole, asked at each sweep (cheap, synchronous). @default always */
  readonly alive?: (item: T) => boolean;
  /** Lets one go (discarded, or still kept at close). What it throws is kept for `close()`. */
  readonly release: (item: T) => Promise<unknown>;
  /** Whether the periodic sweep also tops the reserve up (it always drops stale ones). */
  readonly refillOnSweep: boolean;
}

/** What a {@link WarmReserve} did so far. */
export interface WarmReserveStats {
  /** Made in the background. */
  readonly made: number;
  /** Handed out by `take()`. */
  readonly warm: number;
  /** Let go unused: too old, not whole, or refused by the check. */
  readonly discarded: number;
  /** Makes that threw. */
  readonly failed: number;
  /** Ready now. */
  readonly idle: number;
  /** Why the last one was discarded (null: none was). */
  readonly lastDiscard: string | null;
}

/** See {@link createWarmReserve}. */
export interface WarmReserve<T> {
  /**
   * One kept ready, checked now and never handed out again; it starts a refill. Undefined when
   * none is ready, or the reserve closed meanwhile (the one being checked is let go): the caller
   * then makes its own and calls `fill()` when a refill should start.
   */
  take(): Promise<T | undefined>;
  /** Start filling up to `size` in the background (one at a time) unless it is already. */
  fill(): void;
  stats(): WarmReserveStats;
  /** Whether `close()` was called. */
  readonly closed: boolean;
  /**
   * Stop filling (a make in flight is aborted), let every kept one go and wait for everything
   * started in the background. Resolves with the errors of the releases that failed, ever.
   * Idempotent.
   */
  close(): Promise<unknown[]>;
}

interface Kept<T> {
  readonly item: T;
  readonly madeAt: number;
}

/**
 * Keep `size` things ready, made one at a time in the background. What is kept is checked when
 * it is handed out and dropped when older than `maxAgeMs` (also by a sweep while nobody asks,
 * so an idle reserve holds nothing stale). Nothing is filled until `fill()` or `take()`.
 */
export function createWarmReserve<T>(options: WarmReserveOptions<T>): WarmReserve<T> {
  const { size, maxAgeMs } = options;
  const lifetime = new AbortController();
  const idle: Kept<T>[] = [];
  const background = new Set<Promise<unknown>>();
  const releaseErrors: unknown[] = [];
  const counts = { made: 0, warm: 0, discarded: 0, failed: 0 };
  let lastDiscard: string | null = null;
  let filling: Promise<void> | undefined;
  let closed = false;
  let closing: Promise<unknown[]> | undefined;

  const track = (promise: Promise<unknown>): void => {
    background.add(promise);
    const forget = (): void => {
      background.delete(promise);
    };
    promise.then(forget, forget);
  };
  const release = (kept: Kept<T>): void => {
    track(
      Promise.resolve()
        .then(() => options.release(kept.item))
        .catch((error: unknown) => {
          releaseErrors.push(error);
        }),
    );
  };
  const discard = (kept: Kept<T>, why: string): void => {
    counts.discarded += 1;
    lastDiscard = why;
    release(kept);
  };
  const stale = (kept: Kept<T>, now: number): boolean => now - kept.madeAt > maxAgeMs;
  const fill = (): void => {
    if (closed || filling !== undefined || idle.length >= size) return;
    filling = (async () => {
      try {
        while (!closed && idle.length < size) {
          const item = await options.make(lifetime.signal);
          if (item === null) return;
          counts.made += 1;
          const kept = { item, madeAt: performance.now() };
          if (closed) {
            release(kept);
            return;
          }
          idle.push(kept);
        }
      } catch {
        // The next take() finds nothing ready; its caller makes one itself and sees the error.
        if (!closed) counts.failed += 1;
      } finally {
        filling = undefined;
      }
    })();
    track(filling);
  };
  const sweep = setInterval(
    () => {
      const now = performance.now();
      for (let i = idle.length - 1; i >= 0; i -= 1) {
        const kept = idle[i]!;
        if (stale(kept, now)) discard(idle.splice(i, 1)[0]!, `older than ${maxAgeMs} ms`);
        else if (options.alive?.(kept.item) === false) discard(idle.splice(i, 1)[0]!, 'no longer whole');
      }
      if (options.refillOnSweep) fill();
    },
    Math.max(1_000, Math.floor(maxAgeMs / 4)),
  );
  sweep.unref();

  return {
    async take() {
      for (;;) {
        if (closed) return undefined;
        const kept = idle.shift();
        if (kept === undefined) break;
        if (stale(kept, performance.now())) {
          discard(kept, `older than ${maxAgeMs} ms`);
          continue;
        }
        // Tracked: a close() meanwhile waits for the check, then for this one's release.
        const check = Promise.resolve()
          .then(() => options.check(kept.item))
          .catch((error: unknown) => [
            `its check failed: ${error instanceof Error ? error.message : String(error)}`,
          ]);
        track(check);
        const problems = await check;
        if (closed) {
          release(kept);
          return undefined;
        }
        if (problems.length > 0) {
          discard(kept, problems.join('; '));
          continue;
        }
        counts.warm += 1;
        fill();
        return kept.item;
      }
      return undefined;
    },
    fill,
    stats() {
      return { ...counts, idle: idle.length, lastDiscard };
    },
    get closed() {
      return closed;
    },
    close() {
      closing ??= (async () => {
        closed = true;
        clearInterval(sweep);
        lifetime.abort();
        for (const kept of idle.splice(0)) release(kept);
        while (background.size > 0) await Promise.allSettled([...background]);
        return [...releaseErrors];
      })();
      return closing;
    },
  };
}
