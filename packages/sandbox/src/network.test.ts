import { describe, expect, it } from 'vitest';
import { FORBIDDEN_TARGETS, judgeNetwork, networkVerdictSchema } from './network.js';
import { sandboxOptionsSchema } from './options.js';

describe('judgeNetwork', () => {
  const probes = FORBIDDEN_TARGETS.map((target) => ({
    ...target,
    observed: 'blocked' as const,
    error: 'ENETUNREACH',
  }));
  it('passes when every forbidden route fails and loopback works', () => {
    const verdict = judgeNetwork('loopback', { probes, loopback: { ipv4: true, ipv6: true } }, 5);
    expect(verdict.ok).toBe(true);
    expect(networkVerdictSchema.parse(verdict)).toEqual(verdict);
  });
  it('fails on a reachable forbidden address or a failed loopback control', () => {
    const leaky = probes.map((probe, index) =>
      index === 0 ? { ...probe, observed: 'reachable' as const } : probe,
    );
    expect(
      judgeNetwork('loopback', { probes: leaky, loopback: { ipv4: true, ipv6: null } }, 5).failures,
    ).toEqual(['public-ipv4 1.1.1.1 is reachable, expected blocked']);
    expect(judgeNetwork('loopback', { probes, loopback: { ipv4: false, ipv6: null } }, 5).ok).toBe(false);
  });
  it('covers public, metadata, link-local and every private range', () => {
    const labels = FORBIDDEN_TARGETS.map((target) => target.label);
    for (const label of [
      'public-ipv4',
      'public-ipv6',
      'metadata',
      'link-local-ipv4',
      'private-10/8',
      'private-172.16/12',
      'private-192.168/16',
      'private-fd00::/8',
    ]) {
      expect(labels).toContain(label);
    }
  });
});

describe('sandboxOptionsSchema', () => {
  it('is strict and fills defaults', () => {
    expect(() => sandboxOptionsSchema.parse({ limits: { memoryByte: 1 } })).toThrow();
    expect(() => sandboxOptionsSchema.parse({ hiddenPaths: ['relative'] })).toThrow();
    expect(() =>
      sandboxOptionsSchema.parse({
        network: { mode: 'allowList', allow: [{ address: 'example.com', port: 80 }] },
      }),
    ).toThrow();
    const parsed = sandboxOptionsSchema.parse({});
    expect(parsed.network).toEqual({ mode: 'loopback' });
    expect(parsed.userName).toBe('student');
    expect(parsed.uidRange).toEqual({ first: 2_000_000_000, count: 1_000_000 });
  });
});
