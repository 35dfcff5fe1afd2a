import { BadArgumentError, KarotteError } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { TemplatePackageError, isTemplatePackageError, runTemplatePackage } from './index.js';

describe('runTemplatePackage', () => {
  it('returns the outcome as data, with the defaults applied', async () => {
    const result = await runTemplatePackage();
    expect(result).toMatchObject({ ok: true, reason: null, timeoutMs: 10_000 });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('refuses a misspelled option, naming the field', async () => {
    const error: unknown = await runTemplatePackage({ timeoutMS: 5 } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadArgumentError);
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'timeoutMS' });
  });

  it('refuses an invalid value, naming the field', async () => {
    await expect(runTemplatePackage({ timeoutMs: -1 })).rejects.toMatchObject({ field: 'timeoutMs' });
  });

  it('throws ABORTED when the signal has fired, keeping the foreign error as cause', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    const error: unknown = await runTemplatePackage({ abortSignal: controller.signal }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TemplatePackageError);
    expect(error).toMatchObject({ name: 'TemplatePackageError', code: 'ABORTED', kind: 'system' });
    expect((error as Error).cause).toMatchObject({ name: 'AbortError' });
    expect(KarotteError.isInstance(error)).toBe(true);
    expect(isTemplatePackageError(error)).toBe(true);
    expect(isTemplatePackageError(new BadArgumentError('bad'))).toBe(false);
  });
});
