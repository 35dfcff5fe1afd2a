import { readFileSync } from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import { z } from 'zod';
import { SandboxError } from './errors.js';
import networkProbeScript from './programs/network-probe.sh?raw';

/** One address the network check tried to route to from inside the sandbox, as the student. */
export const networkProbeSchema = z
  .object({
    /** What the address stands for (`public-ipv4`, `metadata`, `host-address`, `dns-server`, …). */
    label: z.string(),
    address: z.string(),
    family: z.union([z.literal(4), z.literal(6)]),
    /** What isolation requires. */
    expected: z.enum(['blocked', 'reachable']),
    /** What the kernel answered: a route exists (`reachable`) or not (`blocked`). */
    observed: z.enum(['blocked', 'reachable']),
    /** The errno of a refused route lookup (ENETUNREACH, EHOSTUNREACH, …). */
    error: z.string().optional(),
  })
  .strict();
export type NetworkProbe = z.infer<typeof networkProbeSchema>;

/** The network verdict of a sandbox, taken before the first student step. JSON-serialisable. */
export const networkVerdictSchema = z
  .object({
    /** True when every probe saw what isolation requires and the loopback control passed. */
    ok: z.boolean(),
    mode: z.enum(['loopback', 'allowList']),
    /** Route lookups (UDP connect: no packet is sent), each as the student, inside the sandbox. */
    probes: z.array(networkProbeSchema),
    /**
     * Positive control, on loopback inside the sandbox as the student: the same route lookup
     * succeeds for 127.0.0.1 (::1), and a TCP connect to a closed loopback port is answered by
     * the kernel (refused), so packets flow on loopback. ipv6 is null when the sandbox has no
     * IPv6 at all (then no IPv6 address is reachable either).
     */
    loopback: z.object({ ipv4: z.boolean(), ipv6: z.boolean().nullable() }).strict(),
    /** One sentence per failed expectation. */
    failures: z.array(z.string()),
    checkedAt: z.string(),
    durationMs: z.number(),
  })
  .strict();
export type NetworkVerdict = z.infer<typeof networkVerdictSchema>;

/** A target of the check as the harness hands it to the probe script. */
export interface NetworkTarget {
  readonly label: string;
  readonly address: string;
  readonly family: 4 | 6;
  readonly expected: 'blocked' | 'reachable';
}

/**
 * Addresses that must be unreachable: public IPv4 and IPv6, link-local, the cloud metadata
 * service, every private range, and (added at run time) the host's own non-loopback addresses
 * and its DNS servers. One address per range is enough for a route lookup.
 */
export const FORBIDDEN_TARGETS: readonly NetworkTarget[] = Object.freeze([
  { label: 'public-ipv4', address: '1.1.1.1', family: 4, expected: 'blocked' },
  { label: 'public-ipv4', address: '8.8.8.8', family: 4, expected: 'blocked' },
  { label: 'public-ipv6', address: '2606:4700:4700::1111', family: 6, expected: 'blocked' },
  { label: 'metadata', address: '169.254.169.254', family: 4, expected: 'blocked' },
  { label: 'link-local-ipv4', address: '169.254.1.1', family: 4, expected: 'blocked' },
  { label: 'metadata-ipv6', address: 'fd00:ec2::254', family: 6, expected: 'blocked' },
  { label: 'private-10/8', address: '10.0.0.1', family: 4, expected: 'blocked' },
  { label: 'private-172.16/12', address: '172.16.0.1', family: 4, expected: 'blocked' },
  { label: 'private-192.168/16', address: '192.168.0.1', family: 4, expected: 'blocked' },
  { label: 'shared-100.64/10', address: '100.64.0.1', family: 4, expected: 'blocked' },
  { label: 'private-fd00::/8', address: 'fd00::1', family: 6, expected: 'blocked' },
] as const);

/** The host's own non-loopback addresses (a service bound to 0.0.0.0 must stay out of reach). */
export function hostAddresses(): NetworkTarget[] {
  const out: NetworkTarget[] = [];
  for (const entries of Object.values(os.networkInterfaces())) {
    for (const entry of entries ?? []) {
      if (entry.internal) continue;
      // Link-local IPv6 needs a scope id the sandbox cannot name; fe80::/10 has no route anyway.
      if (entry.family === 'IPv6' && entry.address.toLowerCase().startsWith('fe80')) continue;
      out.push({
        label: 'host-address',
        address: entry.address,
        family: entry.family === 'IPv4' ? 4 : 6,
        expected: 'blocked',
      });
    }
  }
  return out;
}

/** Name servers of the host's resolv.conf (DNS to the outside must fail too). */
export function dnsServers(): NetworkTarget[] {
  let text: string;
  try {
    text = readFileSync('/etc/resolv.conf', 'utf8');
  } catch {
    return [];
  }
  const out: NetworkTarget[] = [];
  for (const line of text.split('\n')) {
    const match = /^\s*nameserver\s+(\S+)/.exec(line);
    const address = match?.[1]?.split('%')[0];
    if (address === undefined) continue;
    const family = net.isIP(address);
    if (family !== 4 && family !== 6) continue;
    // A loopback resolver (systemd-resolved's 127.0.0.53) is inside the sandbox's own loopback.
    if (address.startsWith('127.') || address === '::1') continue;
    out.push({ label: 'dns-server', address, family, expected: 'blocked' });
  }
  return out;
}

/**
 * The probe (programs/network-probe.sh), run by bash as the student inside the sandbox (bash
 * starts in a few ms; Node took hundreds under load). Arguments: probes as
 * `udp/<address>/<port>` or `tcp/<address>/<port>`. For each, bash opens `/dev/udp/...`
 * (socket + connect: for UDP the kernel only looks up a route, no packet is sent) or
 * `/dev/tcp/...` (a real connect, used only on loopback), with its own error output on stdout. Every probe's output starts with a line `@<index>`; a
 * success prints `reachable`, a failure bash's message (`…: Network is unreachable`).
 */
export const NETWORK_PROBE_SCRIPT: string = networkProbeScript;

/** TCP port of the loopback control: nothing listens in a fresh namespace, so the kernel answers RST. */
const LOOPBACK_CONTROL_PORT = 1;

/** The probe's argv tail (after the script): every target as UDP, then the four loopback controls. */
export function probeArguments(targets: readonly NetworkTarget[]): string[] {
  for (const target of targets) {
    if (net.isIP(target.address) !== target.family) {
      throw new SandboxError(
        'SETUP_FAILED',
        `network check target ${target.address} is not an IPv${target.family} address`,
      );
    }
  }
  return [
    ...targets.map((target) => `udp/${target.address}/53`),
    'udp/127.0.0.1/53',
    'udp/::1/53',
    `tcp/127.0.0.1/${LOOPBACK_CONTROL_PORT}`,
    `tcp/::1/${LOOPBACK_CONTROL_PORT}`,
  ];
}

/** strerror texts (C locale) of the errors a probe meets, as errno names. */
const ERRNO_NAMES: Readonly<Record<string, string>> = {
  'Network is unreachable': 'ENETUNREACH',
  'No route to host': 'EHOSTUNREACH',
  'Cannot assign requested address': 'EADDRNOTAVAIL',
  'Address family not supported by protocol': 'EAFNOSUPPORT',
  'Connection refused': 'ECONNREFUSED',
  'Permission denied': 'EACCES',
  'Operation not permitted': 'EPERM',
  'Connection timed out': 'ETIMEDOUT',
  'Invalid argument': 'EINVAL',
};

/** What one probe saw: reachable, or the errno name (or bounded message) of its failure. */
type ProbeOutcome = { readonly reachable: true } | { readonly reachable: false; readonly error: string };

function outcomeOf(segment: string): ProbeOutcome {
  const text = segment.trim();
  if (text === 'reachable') return { reachable: true };
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const last = lines.at(-1) ?? '';
  const message = last.slice(last.lastIndexOf(': ') + 2).trim();
  const error = ERRNO_NAMES[message] ?? (message.replace(/[^\x20-\x7e]/g, '?').slice(0, 80) || 'EIO');
  return { reachable: false, error };
}

/** What the probe found: every target, and the loopback control. */
export interface ProbeFindings {
  readonly probes: NetworkProbe[];
  readonly loopback: { ipv4: boolean; ipv6: boolean | null };
}

/**
 * Read the probe's output for `targets` (followed by the four loopback controls). Undefined
 * when the output is not complete (the probe died or was killed): nothing is believed then.
 */
export function parseProbeOutput(text: string, targets: readonly NetworkTarget[]): ProbeFindings | undefined {
  const count = targets.length + 4;
  const end = '\n@end\n';
  if (!text.endsWith(end)) return undefined;
  // ['', '0', segment0, '1', segment1, ...]
  const parts = text.slice(0, -end.length).split(/\n@(\d+)\n/);
  if (parts[0] !== '' || parts.length !== 1 + 2 * count) return undefined;
  const outcomes: ProbeOutcome[] = [];
  for (let index = 0; index < count; index += 1) {
    if (parts[1 + 2 * index] !== String(index)) return undefined;
    outcomes.push(outcomeOf(parts[2 + 2 * index] ?? ''));
  }
  const probes = targets.map((target, index): NetworkProbe => {
    const outcome = outcomes[index]!;
    return outcome.reachable
      ? { ...target, observed: 'reachable' }
      : { ...target, observed: 'blocked', error: outcome.error };
  });
  const [udp4, udp6, tcp4, tcp6] = outcomes.slice(targets.length) as [
    ProbeOutcome,
    ProbeOutcome,
    ProbeOutcome,
    ProbeOutcome,
  ];
  // A TCP connect to a closed loopback port answered with a reset proves packets flow both ways.
  const answered = (outcome: ProbeOutcome): boolean => outcome.reachable || outcome.error === 'ECONNREFUSED';
  const noIpv6 = !udp6.reachable && (udp6.error === 'EAFNOSUPPORT' || udp6.error === 'EADDRNOTAVAIL');
  return {
    probes,
    loopback: {
      ipv4: udp4.reachable && answered(tcp4),
      ipv6: noIpv6 ? null : udp6.reachable && answered(tcp6),
    },
  };
}

/** Judge the probe output: every expectation, plus the IPv4 loopback control. */
export function judgeNetwork(
  mode: 'loopback' | 'allowList',
  output: ProbeFindings,
  durationMs: number,
): NetworkVerdict {
  const failures: string[] = [];
  for (const probe of output.probes) {
    if (probe.observed !== probe.expected) {
      failures.push(`${probe.label} ${probe.address} is ${probe.observed}, expected ${probe.expected}`);
    }
  }
  if (!output.loopback.ipv4)
    failures.push(
      'the loopback control failed: 127.0.0.1 is not reachable inside the sandbox, so the probe proves nothing',
    );
  return {
    ok: failures.length === 0,
    mode,
    probes: output.probes,
    loopback: output.loopback,
    failures,
    checkedAt: new Date().toISOString(),
    durationMs,
  };
}
