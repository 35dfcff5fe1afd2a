import { describe, expect, it } from 'vitest';
import { custodyEntrySchema, custodyManifestSchema } from './manifest.js';

const manifest = {
  version: 1,
  ok: true,
  root: '/work',
  destination: '/tmp/karotte-custody-x',
  startedAt: '2026-01-01T00:00:00.000Z',
  durationMs: 3.5,
  budgets: {
    maxFileBytes: 1,
    maxTotalBytes: 1,
    maxEntries: 1,
    maxDepth: 1,
    maxNameBytes: 1,
    maxPathBytes: 1,
  },
  totals: { files: 1, directories: 0, symlinks: 0, entries: 1, bytes: 3 },
  sources: [{ path: 'answer.txt', status: 'copied', kind: 'file' }],
  entries: [
    {
      path: 'answer.txt',
      rawPath: Buffer.from('answer.txt').toString('base64'),
      kind: 'file',
      size: 3,
      sha256: 'a'.repeat(64),
      sparse: false,
      type: { mime: 'text/plain', ext: null, text: true },
    },
  ],
  refusals: [],
  absent: [],
};

describe('custodyManifestSchema', () => {
  it('accepts a manifest and survives JSON', () => {
    expect(custodyManifestSchema.parse(JSON.parse(JSON.stringify(manifest)))).toEqual(manifest);
  });

  it('is strict about fields, hashes and codes', () => {
    expect(custodyManifestSchema.safeParse({ ...manifest, extra: true }).success).toBe(false);
    expect(custodyEntrySchema.safeParse({ ...manifest.entries[0], sha256: 'xyz' }).success).toBe(false);
    expect(
      custodyManifestSchema.safeParse({ ...manifest, refusals: [{ code: 'NOT_A_CODE', message: 'm' }] })
        .success,
    ).toBe(false);
    expect(
      custodyManifestSchema.safeParse({
        ...manifest,
        refusals: [{ code: 'SYMLINK', message: 'm', path: 'p' }],
      }).success,
    ).toBe(true);
  });
});
