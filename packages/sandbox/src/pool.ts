// A warm pool of sandboxes: made ahead, with every proof a cold create takes (uid leased,
// cgroups made and read back, quota formatted and mounted, namespaces and PID 1 up, network
// check passed), and handed out in a few milliseconds. A sandbox is handed out once and never
// comes back: what is pooled is fresh and unused, never a sandbox another student had.
import { createWarmReserve, parseOptions } from '@karotte/base';
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
  const closedError = (): SandboxError => new SandboxError('DESTROYED', 'the sandbox pool was closed');
  let cold = 0;
  // The reserve's signal is the pool's own cancellation: close() stops a make in flight (its
  // admission wait included).
  const reserve = createWarmReserve<Sandbox>({
    size,
    maxAgeMs,
    make: (signal) =>
      createSandbox({
        ...sandboxOptions,
        abortSignal:
          sandboxOptions.abortSignal === undefined
            ? signal
            : AbortSignal.any([sandboxOptions.abortSignal, signal]),
      }),
    check: (sandbox) => readinessProblems(sandbox),
    release: (sandbox) =>
      sandbox.destroy().catch((error: unknown) => {
        throw new SandboxError(
          'TEARDOWN_INCOMPLETE',
          `${sandbox.id}: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }),
    // Stale sandboxes go even while nobody asks, and the pool is topped up again.
    refillOnSweep: true,
  });
  reserve.fill();

  return {
    async acquire(acquireOptions = {}) {
      if (reserve.closed) throw closedError();
      const sandbox = await reserve.take();
      if (sandbox !== undefined) return sandbox;
      if (reserve.closed) throw closedError();
      reserve.fill();
      cold += 1;
      return createSandbox({
        ...sandboxOptions,
        ...(acquireOptions.abortSignal === undefined ? {} : { abortSignal: acquireOptions.abortSignal }),
      });
    },
    stats() {
      const { made, warm, discarded, failed, idle, lastDiscard } = reserve.stats();
      return { made, warm, cold, discarded, failed, idle, lastDiscard };
    },
    async close() {
      const failures = await reserve.close();
      if (failures.length > 0) {
        const described = failures.map((error) => (error instanceof Error ? error.message : String(error)));
        throw new SandboxError(
          'TEARDOWN_INCOMPLETE',
          `the pool could not tear down ${described.length} sandbox(es): ${described.join('; ')}`,
          { leftovers: described },
        );
      }
    },
  };
}
