import { BadArgumentError, KarotteError } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { ViewerError, isViewerError, runViewer } from './index.js';

describe('runViewer', () => {
  it('returns the outcome as data, with the defaults applied', async () => {
    const result = await runViewer();
    expect(result).toMatchObject({ ok: true, reason: null, timeoutMs: 10_000 });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('refuses a misspelled option, naming the field', async () => {
    const error: unknown = await runViewer({ timeoutMS: 5 } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadArgumentError);
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'timeoutMS' });
  });

  it('refuses an invalid value, naming the field', async () => {
    await expect(runViewer({ timeoutMs: -1 })).rejects.toMatchObject({ field: 'timeoutMs' });
  });

  it('throws ABORTED when the signal has fired, keeping the foreign error as cause', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    const error: unknown = await runViewer({ abortSignal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ViewerError);
    expect(error).toMatchObject({ name: 'ViewerError', code: 'ABORTED', kind: 'system' });
    expect((error as Error).cause).toMatchObject({ name: 'AbortError' });
    expect(KarotteError.isInstance(error)).toBe(true);
    expect(isViewerError(error)).toBe(true);
    expect(isViewerError(new BadArgumentError('bad'))).toBe(false);
  });
});
