import { BadArgumentError, KarotteError } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { DispatchError, isDispatchError, runDispatch } from './index.js';

describe('runDispatch', () => {
  it('returns the outcome as data, with the defaults applied', async () => {
    const result = await runDispatch();
    expect(result).toMatchObject({ ok: true, reason: null, timeoutMs: 10_000 });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('refuses a misspelled option, naming the field', async () => {
    const error: unknown = await runDispatch({ timeoutMS: 5 } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadArgumentError);
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'timeoutMS' });
  });

  it('refuses an invalid value, naming the field', async () => {
    await expect(runDispatch({ timeoutMs: -1 })).rejects.toMatchObject({ field: 'timeoutMs' });
  });

  it('throws ABORTED when the signal has fired, keeping the foreign error as cause', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    const error: unknown = await runDispatch({ abortSignal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DispatchError);
    expect(error).toMatchObject({ name: 'DispatchError', code: 'ABORTED', kind: 'system' });
    expect((error as Error).cause).toMatchObject({ name: 'AbortError' });
    expect(KarotteError.isInstance(error)).toBe(true);
    expect(isDispatchError(error)).toBe(true);
    expect(isDispatchError(new BadArgumentError('bad'))).toBe(false);
  });
});
