import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { RetryKind } from './turn.js';

/** The retry policy of a model agent (the SDK's own retries are off). */
export const retryPolicySchema = z
  .object({
    /**
     * Requests per turn at most, the first included.
     * @default 16
     */
    maxAttempts: z.number().int().min(1).max(100).default(16),
    /**
     * The first backoff, in milliseconds; each later one doubles, up to `maxDelayMs`.
     * @default 1000
     */
    initialDelayMs: z.number().int().min(0).max(600_000).default(1000),
    /**
     * The longest backoff before jitter, in milliseconds.
     * @default 60000
     */
    maxDelayMs: z.number().int().min(0).max(3_600_000).default(60_000),
    /**
     * Jitter: each backoff is lengthened by up to this fraction of itself, at random.
     * @default 0.5
     */
    jitter: z.number().min(0).max(1).default(0.5),
    /**
     * The longest wait a server's `retry-after` / `retry-after-ms` gets, in milliseconds.
     * @default 300000
     */
    retryAfterCapMs: z.number().int().min(0).max(3_600_000).default(300_000),
    /**
     * Attempts at most when the server refuses the key (401, 403): providers answer false
     * negatives now and then, but a wrong key stays wrong.
     * @default 3
     */
    authAttempts: z.number().int().min(1).max(100).default(3),
    /**
     * Attempts at most when nothing listens (connection refused, name not found).
     * @default 4
     */
    unreachableAttempts: z.number().int().min(1).max(100).default(4),
  })
  .strict();

export type RetryPolicy = z.output<typeof retryPolicySchema>;
export type RetryPolicyOptions = z.input<typeof retryPolicySchema>;

/** What one failed attempt was, for the policy. */
export interface AttemptFailure {
  readonly kind: RetryKind;
  readonly httpStatus: number | null;
  /** The server's `retry-after-ms` or `retry-after`, in milliseconds, when it sent one. */
  readonly retryAfterMs: number | null;
  readonly message: string;
}

/** Counters of one turn's failures, by kind. */
export interface FailureCounts {
  total: number;
  auth: number;
  unreachable: number;
}

/** Whether the policy allows another attempt after `failure`, given the failures so far (it included). */
export function mayRetry(policy: RetryPolicy, failure: AttemptFailure, counts: FailureCounts): boolean {
  if (failure.kind === 'fatal') return false;
  if (counts.total >= policy.maxAttempts) return false;
  if (failure.kind === 'auth' && counts.auth >= policy.authAttempts) return false;
  if (failure.kind === 'unreachable' && counts.unreachable >= policy.unreachableAttempts) return false;
  return true;
}

/**
 * How long to wait before the next attempt, in milliseconds: the server's `retry-after`
 * (capped at `retryAfterCapMs`) when it sent one, else the jittered exponential backoff of
 * the `failures`-th failure.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  failure: AttemptFailure,
  failures: number,
  random: () => number = Math.random,
): number {
  if (failure.retryAfterMs !== null) return Math.min(failure.retryAfterMs, policy.retryAfterCapMs);
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (1 + policy.jitter * random()));
}

/**
 * The wait a response asks for, in milliseconds: `retry-after-ms` (milliseconds), else
 * `retry-after` (seconds, or an HTTP date); null when neither is there or valid.
 */
export function parseRetryAfter(headers: Headers | undefined, now = Date.now()): number | null {
  if (headers === undefined) return null;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.round(Number(ms));
  const after = headers.get('retry-after');
  if (after === null) return null;
  if (/^\s*\d+(\.\d+)?\s*$/.test(after)) return Math.round(Number(after) * 1000);
  // An HTTP date has a weekday and a month name; anything else (`-5`) is no wait.
  const date = /[A-Za-z]/.test(after) ? Date.parse(after) : Number.NaN;
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}

/** The kind of a failed HTTP status. */
export function kindOfStatus(status: number): RetryKind {
  if (status === 429) return 'rate_limit';
  if (status === 401 || status === 403) return 'auth';
  // 408 (request timeout) and 409 (a lock or conflict on the server) pass; the SDK retries them too.
  if (status === 408 || status === 409) return 'server';
  if (status >= 500) return 'server';
  return 'fatal';
}

/** errno-style codes anywhere in an error's cause chain (ECONNRESET, UND_ERR_SOCKET, …). */
export function causeCodes(error: unknown): string[] {
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors)) for (const inner of errors) codes.push(...causeCodes(inner));
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
}

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** A failure with no HTTP response: nothing listening (`unreachable`) or a dropped connection. */
export function kindOfConnectionFailure(error: unknown): 'unreachable' | 'connection' {
  return causeCodes(error).some((code) => UNREACHABLE_CODES.has(code)) ? 'unreachable' : 'connection';
}

/** Wait `ms`, or reject with the signal's reason as soon as it aborts. */
export async function waitFor(ms: number, abortSignal: AbortSignal): Promise<void> {
  if (ms <= 0) {
    abortSignal.throwIfAborted();
    return;
  }
  await sleep(ms, undefined, { signal: abortSignal });
}
