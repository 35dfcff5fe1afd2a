import { describe, expect, it } from 'vitest';
import { BadArgumentError, parseOptions } from '@karotte/base';
import {
  DEFAULT_CUSTODY_BUDGETS,
  custodyOptionsSchema,
  custodySourceSchema,
  readUntrustedOptionsSchema,
  reclaimOptionsSchema,
} from './options.js';

describe('custody options', () => {
  it('has the reference budgets as defaults', () => {
    const parsed = parseOptions(custodyOptionsSchema, { root: '/work' }, 'options');
    expect(parsed).toMatchObject({
      maxFileBytes: 256 * 1024 * 1024,
      maxTotalBytes: 1024 * 1024 * 1024,
      maxEntries: 10_000,
      maxDepth: 32,
      maxNameBytes: 255,
      maxPathBytes: 3072,
      allowSymlinks: false,
      timeoutMs: 600_000,
    });
    expect(DEFAULT_CUSTODY_BUDGETS.maxEntries).toBe(10_000);
  });

  it('is strict: a misspelled security option fails instead of vanishing', () => {
    expect(() =>
      parseOptions(custodyOptionsSchema, { root: '/work', allowSymlink: true }, 'options'),
    ).toThrow(BadArgumentError);
    expect(() => parseOptions(custodyOptionsSchema, { root: '/work', maxFileBytes: -1 }, 'options')).toThrow(
      /maxFileBytes/,
    );
  });

  it('requires an absolute, normalized root', () => {
    for (const root of ['work', '/work/', '/a/../b', '/a//b', '/a/./b', '/a\0b']) {
      expect(() => parseOptions(custodyOptionsSchema, { root }, 'options'), root).toThrow(BadArgumentError);
    }
    expect(parseOptions(custodyOptionsSchema, { root: '/' }, 'options').root).toBe('/');
  });

  it('accepts relative sources only, without . or .. components', () => {
    for (const good of ['answer.txt', 'out/result.json', 'src/', '-leading-dash', 'name with spaces']) {
      expect(custodySourceSchema.safeParse(good).success, good).toBe(true);
    }
    for (const bad of ['', '/etc/passwd', '../x', 'a/../b', 'a/./b', 'a//b', '.', 'a\0b']) {
      expect(custodySourceSchema.safeParse(bad).success, bad).toBe(false);
    }
    expect(custodySourceSchema.safeParse({ path: 'plot.png', type: { allow: ['image/png'] } }).success).toBe(
      true,
    );
    expect(custodySourceSchema.safeParse({ path: 'plot.png', type: { allow: ['PNG'] } }).success).toBe(false);
    expect(custodySourceSchema.safeParse({ path: 'x', typo: 1 }).success).toBe(false);
  });
});

describe('untrusted and reclaim options', () => {
  it('bounds reads by default', () => {
    expect(parseOptions(readUntrustedOptionsSchema, {}, 'options')).toMatchObject({
      maxBytes: 10 * 1024 * 1024,
      timeoutMs: 30_000,
      encoding: 'buffer',
      truncate: false,
      followSymlinks: false,
    });
  });

  it('needs at least one absolute root to reclaim', () => {
    expect(() => parseOptions(reclaimOptionsSchema, { roots: [] }, 'options')).toThrow(BadArgumentError);
    expect(() => parseOptions(reclaimOptionsSchema, { roots: ['tmp'] }, 'options')).toThrow(BadArgumentError);
    expect(parseOptions(reclaimOptionsSchema, { roots: ['/tmp'] }, 'options')).toMatchObject({
      exclude: [],
      crossMounts: false,
      timeoutMs: 600_000,
    });
  });
});
