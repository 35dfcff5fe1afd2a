// The network probe script itself, run by a real bash in network namespaces this test makes
// (no sandbox around it): what it prints is what the harness judges.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  FORBIDDEN_TARGETS,
  NETWORK_PROBE_SCRIPT,
  judgeNetwork,
  parseProbeOutput,
  probeArguments,
} from './network.js';

function probe(loopbackUp: boolean): string {
  const setup = loopbackUp ? '/usr/sbin/ip link set lo up && ' : '';
  // unshare --net: a fresh namespace with only loopback; it goes away with the process.
  const result = spawnSync(
    '/usr/bin/unshare',
    [
      '--net',
      '/usr/bin/bash',
      '-c',
      `${setup}exec /usr/bin/env -i LC_ALL=C PATH=/usr/bin:/bin /usr/bin/bash --noprofile --norc -c "$1" karotte-netcheck "\${@:2}"`,
      'karotte-test',
      NETWORK_PROBE_SCRIPT,
      ...probeArguments(FORBIDDEN_TARGETS),
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  expect(result.status).toBe(0);
  return result.stdout;
}

describe('the network probe script', () => {
  it('finds every forbidden address unroutable in a loopback-only namespace, with a passing control', () => {
    const findings = parseProbeOutput(probe(true), FORBIDDEN_TARGETS);
    expect(findings).toBeDefined();
    for (const found of findings!.probes)
      expect(found).toMatchObject({ observed: 'blocked', error: 'ENETUNREACH' });
    expect(findings!.loopback.ipv4).toBe(true);
    expect(judgeNetwork('loopback', findings!, 1).ok).toBe(true);
  });

  it('fails the positive control when loopback is down (a probe that sees nothing proves nothing)', () => {
    const findings = parseProbeOutput(probe(false), FORBIDDEN_TARGETS);
    expect(findings?.loopback.ipv4).toBe(false);
    expect(judgeNetwork('loopback', findings!, 1)).toMatchObject({
      ok: false,
      failures: [expect.stringContaining('loopback control failed')],
    });
  });
});
