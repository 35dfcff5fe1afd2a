// The network check of a world, taken from inside as the student before the first step: route
// lookups to every forbidden target (a UDP connect sends no packet), the host's own addresses
// and DNS servers, and the allowed endpoints, judged against the network mode.
import type { SandboxBinaries } from './confinement/binaries.js';
import { runInside } from './confinement/run.js';
import type { World } from './confinement/world.js';
import { SandboxError } from './errors.js';
import {
  FORBIDDEN_TARGETS,
  NETWORK_PROBE_SCRIPT,
  dnsServers,
  hostAddresses,
  judgeNetwork,
  parseProbeOutput,
  probeArguments,
  type NetworkTarget,
  type NetworkVerdict,
} from './network.js';
import type { ParsedSandboxOptions } from './options.js';

/** Run the probe in the world as `uid` and judge it. @throws SandboxError `SETUP_FAILED` when it did not finish. */
export async function checkWorldNetwork(context: {
  readonly world: World;
  readonly uid: number;
  readonly bins: SandboxBinaries;
  readonly network: ParsedSandboxOptions['network'];
}): Promise<NetworkVerdict> {
  const { world, uid, bins, network } = context;
  const started = performance.now();
  const mode = network.mode;
  const allowed = mode === 'allowList' ? network.allow.map((endpoint) => endpoint.address) : [];
  const targets: NetworkTarget[] = [...FORBIDDEN_TARGETS, ...hostAddresses(), ...dnsServers()].filter(
    (target) => !allowed.includes(target.address),
  );
  for (const address of allowed)
    targets.push({ label: 'allowed', address, family: 4, expected: 'reachable' });
  const output = await runInside({
    world,
    uid: uid,
    program: [
      bins.env,
      '-i',
      '-C',
      '/',
      'PATH=/usr/bin:/bin',
      'LC_ALL=C',
      bins.bash,
      '--noprofile',
      '--norc',
      '-c',
      NETWORK_PROBE_SCRIPT,
      'karotte-netcheck',
      ...probeArguments(targets),
    ],
    stdin: '',
    timeoutMs: 60_000,
    maxStdoutBytes: 256 * 1024,
  });
  const findings = parseProbeOutput(output.stdout.toString('utf8'), targets);
  if (findings === undefined) {
    throw new SandboxError(
      'SETUP_FAILED',
      `the network check did not finish: ${output.stderr.slice(0, 1000) || `exit ${String(output.exitCode ?? output.signal)}${output.timedOut ? ' (timed out)' : ''}`}`,
    );
  }
  return judgeNetwork(mode, findings, Math.round(performance.now() - started));
}
