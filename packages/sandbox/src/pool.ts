// A warm pool of sandboxes: made ahead, with every proof a cold create takes (uid leased,
// cgroups made and read back, quota formatted and mounted, namespaces and PID 1 up, network
// check passed), and handed out in a few milliseconds. A sandbox is handed out once and never
// comes back: what is pooled is fresh and unused, never a sandbox another student had.
import { parseOptions } from '@karotte/base';
import { z } from 'zod';
import { SandboxError } from './errors.js';
import { sandboxOptionsSchema, type SandboxOptions } from './options.js';
import { createSandbox, readinessProblems } from './sandbox.js';
import type { Sandbox } from './types.js';

/** Options of {@link createSandboxPool}. */
export const sandboxPoolOptionsSchema = z
  .object({
    /**
     * Sandboxes kept ready. Each holds a uid, a cgroup group, a quota and its admission
     * reservation (its memory limit) while it waits.
     * @default 1
     */
    size: z.number().int().min(1).max(64).default(1),
    /**
     * A pooled sandbox older than this is destroyed, not handed out (and a new one made).
     * @default 600000 (10 minutes)
     */
    maxAgeMs: z.number().int().min(1_000).max(86_400_000).default(600_000),
  })
  .strict();

/** Options of {@link createSandboxPool}. */
export type SandboxPoolOptions = z.input<typeof sandboxPoolOptionsSchema>;

/** What a pool has done so far. */
export interface SandboxPoolStats {
  /** Sandboxes made for the pool. */
  readonly made: number;
  /** Handed out from the pool (warm). */
  readonly warm: number;
  /** Made on demand because no pooled one was ready (cold). */
  readonly cold: number;
  /** Pooled sandboxes destroyed instead of handed out: too old, or a re-check failed. */
  readonly discarded: number;
  /** Background makes that failed (the next acquire() then makes its own, and sees the error). */
  readonly failed: number;
  /** Ready now. */
  readonly idle: number;
  /** Why the last pooled sandbox was discarded, or null. */
  readonly lastDiscard: string | null;
}

/** A warm pool of sandboxes of one configuration. */
export interface SandboxPool {
  /**
   * A fresh sandbox: a pooled one that passes its re-check (never used, younger than
   * `maxAgeMs`, the same world and network namespace, its quota mounted, its limits read back
   * unchanged), else one made now. The pool then makes a replacement in the background. The
   * caller owns the sandbox (destroy() it).
   * @throws SandboxError `DESTROYED` after close(); any error of createSandbox() for one made now.
   */
  acquire(options?: { readonly abortSignal?: AbortSignal }): Promise<Sandbox>;
  stats(): SandboxPoolStats;
  /**
   * Stop refilling and destroy every pooled sandbox (the ones handed out are the callers').
   * Idempotent.
   * @throws SandboxError `TEARDOWN_INCOMPLETE` when a pooled sandbox could not be torn down
   *   (its uid stays leased; the next start on this host reclaims it).
   */
  close(): Promise<void>;
}

interface Pooled {
  readonly sandbox: Sandbox;
  readonly madeAt: number;
}

/**
 * Keep `size` sandboxes of `sandboxOptions` ready. Pooled sandboxes are ordinary ones (a lease,
 * a state directory): after a crash the next start on the host reclaims them like any other.
 * Filling runs one sandbox at a time in the background and starts at once.
 * @throws BadArgumentError for invalid options (before anything is made).
 */
export function createSandboxPool(
  sandboxOptions: SandboxOptions = {},
  poolOptions: SandboxPoolOptions = {},
): SandboxPool {
  parseOptions(sandboxOptionsSchema, sandboxOptions, 'sandbox options');
  const { size, maxAgeMs } = parseOptions(sandboxPoolOptionsSchema, poolOptions, 'sandbox pool options');
  // The pool's own cancellation: close() stops a make in flight (its admission wait included).
  const lifetime = new AbortController();
  const options: SandboxOptions = {
    ...sandboxOptions,
    abortSignal:
      sandboxOptions.abortSignal === undefined
        ? lifetime.signal
        : AbortSignal.any([sandboxOptions.abortSignal, lifetime.signal]),
  };
  const idle: Pooled[] = [];
  const background = new Set<Promise<unknown>>();
  const teardownFailures: string[] = [];
  const counts = { made: 0, warm: 0, cold: 0, discarded: 0, failed: 0 };
  let lastDiscard: string | null = null;
  let filling: Promise<void> | undefined;
  let closed = false;
  let closing: Promise<void> | undefined;

  const track = (promise: Promise<unknown>): void => {
    background.add(promise);
    const forget = (): void => {
      background.delete(promise);
    };
    promise.then(forget, forget);
  };
  /** Tear a pooled sandbox down off the caller's path; close() waits for it and reports a failure. */
  const destroyLater = (entry: Pooled): void => {
    track(
      entry.sandbox.destroy().catch((error: unknown) => {
        teardownFailures.push(
          `${entry.sandbox.id}: ${error instanceof Error ? error.message : String(error)}`,
        );
      }),
    );
  };
  const discard = (entry: Pooled, why: string): void => {
    counts.discarded += 1;
    lastDiscard = why;
    destroyLater(entry);
  };
  const fill = (): void => {
    if (closed || filling !== undefined || idle.length >= size) return;
    filling = (async () => {
      try {
        while (!closed && idle.length < size) {
          const sandbox = await createSandbox(options);
          counts.made += 1;
          if (closed) {
            destroyLater({ sandbox, madeAt: performance.now() });
            return;
          }
          idle.push({ sandbox, madeAt: performance.now() });
        }
      } catch {
        // The next acquire() finds nothing ready, makes its own and sees the error itself.
        if (!closed) counts.failed += 1;
      } finally {
        filling = undefined;
      }
    })();
    track(filling);
  };
  // Stale sandboxes go even while nobody asks: a pool left idle must not hold old worlds.
  const sweep = setInterval(
    () => {
      const now = performance.now();
      for (let i = idle.length - 1; i >= 0; i -= 1) {
        if (now - idle[i]!.madeAt > maxAgeMs) discard(idle.splice(i, 1)[0]!, `older than ${maxAgeMs} ms`);
      }
      fill();
    },
    Math.max(1_000, Math.floor(maxAgeMs / 4)),
  );
  sweep.unref();
  fill();

  return {
    async acquire(acquireOptions = {}) {
      if (closed) throw new SandboxError('DESTROYED', 'the sandbox pool was closed');
      for (;;) {
        const entry = idle.shift();
        if (entry === undefined) break;
        const age = performance.now() - entry.madeAt;
        if (age > maxAgeMs) {
          discard(entry, `older than ${maxAgeMs} ms`);
          continue;
        }
        // Tracked: a close() meanwhile waits for the check, then for this entry's teardown.
        const check = readinessProblems(entry.sandbox).catch((error: unknown) => [
          `its re-check failed: ${error instanceof Error ? error.message : String(error)}`,
        ]);
        track(check);
        const problems = await check;
        if (closed) {
          destroyLater(entry);
          throw new SandboxError('DESTROYED', 'the sandbox pool was closed');
        }
        if (problems.length > 0) {
          discard(entry, problems.join('; '));
          continue;
        }
        counts.warm += 1;
        fill();
        return entry.sandbox;
      }
      if (closed) throw new SandboxError('DESTROYED', 'the sandbox pool was closed');
      fill();
      counts.cold += 1;
      return createSandbox({
        ...sandboxOptions,
        ...(acquireOptions.abortSignal === undefined ? {} : { abortSignal: acquireOptions.abortSignal }),
      });
    },
    stats() {
      return { ...counts, idle: idle.length, lastDiscard };
    },
    close() {
      closing ??= (async () => {
        closed = true;
        clearInterval(sweep);
        lifetime.abort(new SandboxError('DESTROYED', 'the sandbox pool was closed'));
        for (const entry of idle.splice(0)) destroyLater(entry);
        while (background.size > 0) await Promise.allSettled([...background]);
        if (teardownFailures.length > 0) {
          throw new SandboxError(
            'TEARDOWN_INCOMPLETE',
            `the pool could not tear down ${teardownFailures.length} sandbox(es): ${teardownFailures.join('; ')}`,
            { leftovers: [...teardownFailures] },
          );
        }
      })();
      return closing;
    },
  };
}
