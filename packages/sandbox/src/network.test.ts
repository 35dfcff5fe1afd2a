import { describe, expect, it } from 'vitest';
import {
  FORBIDDEN_TARGETS,
  judgeNetwork,
  networkVerdictSchema,
  parseProbeOutput,
  probeArguments,
  type NetworkTarget,
} from './network.js';
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

describe('parseProbeOutput', () => {
  // What the bash probe printed in a fresh network namespace with loopback up (captured).
  const targets: NetworkTarget[] = [
    { label: 'public-ipv4', address: '1.1.1.1', family: 4, expected: 'blocked' },
    { label: 'public-ipv6', address: '2606:4700:4700::1111', family: 6, expected: 'blocked' },
  ];
  const unreachable = (path: string): string =>
    `karotte-netcheck: connect: Network is unreachable\nkarotte-netcheck: line 5: /dev/${path}: Network is unreachable\n`;
  const refused = (path: string): string =>
    `karotte-netcheck: connect: Connection refused\nkarotte-netcheck: line 5: /dev/${path}: Connection refused\n`;
  const isolated =
    `\n@0\n${unreachable('udp/1.1.1.1/53')}\n@1\n${unreachable('udp/2606:4700:4700::1111/53')}` +
    `\n@2\nreachable\n@3\nreachable\n@4\n${refused('tcp/127.0.0.1/1')}\n@5\n${refused('tcp/::1/1')}\n@end\n`;

  it('reads blocked routes with their errno and a loopback control that answered', () => {
    expect(probeArguments(targets)).toEqual([
      'udp/1.1.1.1/53',
      'udp/2606:4700:4700::1111/53',
      'udp/127.0.0.1/53',
      'udp/::1/53',
      'tcp/127.0.0.1/1',
      'tcp/::1/1',
    ]);
    const findings = parseProbeOutput(isolated, targets);
    expect(findings).toEqual({
      probes: [
        { ...targets[0], observed: 'blocked', error: 'ENETUNREACH' },
        { ...targets[1], observed: 'blocked', error: 'ENETUNREACH' },
      ],
      loopback: { ipv4: true, ipv6: true },
    });
    expect(judgeNetwork('loopback', findings!, 3).ok).toBe(true);
  });

  it('fails the control when loopback is down, and reads a reachable forbidden address', () => {
    // Captured with loopback down: ::1 has no address at all (so IPv6 counts as absent).
    const down =
      `\n@0\n${unreachable('udp/1.1.1.1/53')}\n@1\n${unreachable('udp/2606:4700:4700::1111/53')}` +
      `\n@2\n${unreachable('udp/127.0.0.1/53')}` +
      '\n@3\nkarotte-netcheck: connect: Cannot assign requested address\nkarotte-netcheck: line 5: /dev/udp/::1/53: Cannot assign requested address\n' +
      `\n@4\n${unreachable('tcp/127.0.0.1/1')}\n@5\nx: Cannot assign requested address\n\n@end\n`;
    const findings = parseProbeOutput(down, targets)!;
    expect(findings.loopback).toEqual({ ipv4: false, ipv6: null });
    expect(judgeNetwork('loopback', findings, 3).ok).toBe(false);
    const leaky = isolated.replace(`\n@0\n${unreachable('udp/1.1.1.1/53')}`, '\n@0\nreachable');
    expect(judgeNetwork('loopback', parseProbeOutput(leaky, targets)!, 3).failures).toEqual([
      'public-ipv4 1.1.1.1 is reachable, expected blocked',
    ]);
  });

  it('believes nothing from an incomplete or out-of-order output', () => {
    expect(parseProbeOutput(isolated.replace('\n@end\n', ''), targets)).toBeUndefined();
    expect(parseProbeOutput(isolated.replace('\n@1\n', '\n@7\n'), targets)).toBeUndefined();
    expect(parseProbeOutput(isolated, [...targets, targets[0]!])).toBeUndefined();
    expect(parseProbeOutput('', targets)).toBeUndefined();
  });

  it('refuses a target that is not an address of its family', () => {
    expect(() =>
      probeArguments([{ label: 'x', address: '1.1.1.1/../../tcp', family: 4, expected: 'blocked' }]),
    ).toThrow(/not an IPv4 address/);
  });
});
