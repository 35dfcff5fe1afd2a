import { describe, expect, it } from 'vitest';
import {
  causeCodes,
  kindOfConnectionFailure,
  kindOfStatus,
  mayRetry,
  parseRetryAfter,
  retryDelayMs,
  retryPolicySchema,
  waitFor,
  type AttemptFailure,
} from './retry.js';

const policy = retryPolicySchema.parse({});
const failure = (kind: AttemptFailure['kind'], retryAfterMs: number | null = null): AttemptFailure => ({
  kind,
  httpStatus: null,
  retryAfterMs,
  message: 'x',
});

describe('the retry policy', () => {
  it('has the defaults of the Python Karotte: 16 attempts, 1–60 s backoff +50 %, retry-after capped at 5 min, auth 3, unreachable 4', () => {
    expect(policy).toEqual({
      maxAttempts: 16,
      initialDelayMs: 1000,
      maxDelayMs: 60_000,
      jitter: 0.5,
      retryAfterCapMs: 300_000,
      authAttempts: 3,
      unreachableAttempts: 4,
    });
  });

  it('backs off exponentially with jitter, capped', () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(policy, failure('server'), n, () => 0))).toEqual([
      1000, 2000, 4000, 8000,
    ]);
    expect(retryDelayMs(policy, failure('server'), 1, () => 1)).toBe(1500);
    expect(retryDelayMs(policy, failure('server'), 20, () => 0)).toBe(60_000);
    expect(retryDelayMs(policy, failure('server'), 20, () => 1)).toBe(90_000);
  });

  it("takes the server's retry-after over the backoff, capped", () => {
    expect(retryDelayMs(policy, failure('rate_limit', 2500), 5)).toBe(2500);
    expect(retryDelayMs(policy, failure('rate_limit', 10_000_000), 1)).toBe(300_000);
    expect(retryDelayMs(policy, failure('rate_limit', 0), 3)).toBe(0);
  });

  it('bounds attempts in total and per kind', () => {
    const counts = (total: number, auth = 0, unreachable = 0) => ({ total, auth, unreachable });
    expect(mayRetry(policy, failure('server'), counts(15))).toBe(true);
    expect(mayRetry(policy, failure('server'), counts(16))).toBe(false);
    expect(mayRetry(policy, failure('auth'), counts(2, 2))).toBe(true);
    expect(mayRetry(policy, failure('auth'), counts(3, 3))).toBe(false);
    expect(mayRetry(policy, failure('unreachable'), counts(4, 0, 4))).toBe(false);
    expect(mayRetry(policy, failure('fatal'), counts(1))).toBe(false);
  });

  it('classifies statuses', () => {
    expect([429, 401, 403, 408, 409, 500, 503, 400, 404, 422].map(kindOfStatus)).toEqual([
      'rate_limit',
      'auth',
      'auth',
      'server',
      'server',
      'server',
      'server',
      'fatal',
      'fatal',
      'fatal',
    ]);
  });

  it('tells an endpoint where nothing listens from a dropped connection, by the cause chain', () => {
    const refused = new Error('fetch failed', {
      cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }),
    });
    const reset = new Error('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }) });
    const aggregate = Object.assign(new Error('x'), {
      errors: [Object.assign(new Error('v6'), { code: 'ECONNREFUSED' })],
    });
    expect(kindOfConnectionFailure(refused)).toBe('unreachable');
    expect(kindOfConnectionFailure(reset)).toBe('connection');
    expect(kindOfConnectionFailure(aggregate)).toBe('unreachable');
    expect(causeCodes(reset)).toEqual(['ECONNRESET']);
  });
});

describe('parseRetryAfter', () => {
  it('reads retry-after-ms first, then retry-after in seconds or as an HTTP date', () => {
    const now = Date.parse('2026-12-01T12:00:00Z');
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '1500.4', 'retry-after': '9' }), now)).toBe(1500);
    expect(parseRetryAfter(new Headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(parseRetryAfter(new Headers({ 'retry-after': '0.5' }), now)).toBe(500);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Tue, 01 Dec 2026 12:00:30 GMT' }), now)).toBe(
      30_000,
    );
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Tue, 01 Dec 2026 11:00:00 GMT' }), now)).toBe(0);
  });

  it('ignores what is not a wait', () => {
    expect(parseRetryAfter(undefined)).toBeNull();
    expect(parseRetryAfter(new Headers())).toBeNull();
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }))).toBeNull();
    expect(parseRetryAfter(new Headers({ 'retry-after': '-5' }))).toBeNull();
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': 'NaN', 'retry-after': '1' }))).toBe(1000);
  });
});

describe('waitFor', () => {
  it('waits, and rejects as soon as the signal aborts', async () => {
    const started = performance.now();
    await waitFor(50, new AbortController().signal);
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    const controller = new AbortController();
    setTimeout(() => {
      controller.abort();
    }, 20);
    const aborted = performance.now();
    await expect(waitFor(10_000, controller.signal)).rejects.toMatchObject({ name: 'AbortError' });
    expect(performance.now() - aborted).toBeLessThan(1000);
    await expect(waitFor(0, controller.signal)).rejects.toBeDefined();
  });
});
