import { readFileSync } from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import { z } from 'zod';

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
    /** Positive control: a listener on loopback inside the sandbox accepted a connection and echoed. */
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
  let text = '';
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
 * The probe, run by Node as the student inside the sandbox. Targets arrive on stdin as JSON;
 * for each, a UDP socket `connect()` asks the kernel for a route without sending a packet.
 * Then a loopback listener is started and connected to (the positive control). Prints one
 * JSON line.
 */
export const NETWORK_PROBE_SCRIPT = String.raw`
'use strict';
const dgram = require('node:dgram');
const net = require('node:net');
function route(t) {
  return new Promise((resolve) => {
    const s = dgram.createSocket(t.family === 6 ? 'udp6' : 'udp4');
    let done = false;
    const finish = (r) => { if (done) return; done = true; try { s.close(); } catch {} resolve(r); };
    s.on('error', (e) => finish({ observed: 'blocked', error: String(e.code || e.message) }));
    try {
      s.connect(53, t.address, (e) => finish(e ? { observed: 'blocked', error: String(e.code || e.message) } : { observed: 'reachable' }));
    } catch (e) { finish({ observed: 'blocked', error: String(e.code || e.message) }); }
  });
}
function loop(host) {
  return new Promise((resolve) => {
    const server = net.createServer((c) => { c.on('data', (d) => c.end(d)); c.on('error', () => {}); });
    const timer = setTimeout(() => { server.close(); resolve(false); }, 2000);
    server.on('error', () => { clearTimeout(timer); resolve(null); });
    server.listen(0, host, () => {
      const port = server.address().port;
      const c = net.connect(port, host);
      let got = '';
      c.on('data', (d) => { got += d; });
      c.on('error', () => {});
      c.on('close', () => { clearTimeout(timer); server.close(); resolve(got === 'karotte'); });
      c.write('karotte');
    });
  });
}
let input = '';
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', async () => {
  const targets = JSON.parse(input);
  const probes = [];
  for (const t of targets) probes.push({ ...t, ...(await route(t)) });
  const ipv4 = await loop('127.0.0.1');
  const ipv6 = await loop('::1');
  process.stdout.write(JSON.stringify({ probes, loopback: { ipv4: ipv4 === true, ipv6 } }) + '\n');
});
`;

/** What the probe script prints, validated before it is believed. */
export const probeOutputSchema = z
  .object({
    probes: z.array(
      z
        .object({
          label: z.string(),
          address: z.string(),
          family: z.union([z.literal(4), z.literal(6)]),
          expected: z.enum(['blocked', 'reachable']),
          observed: z.enum(['blocked', 'reachable']),
          error: z.string().optional(),
        })
        .strict(),
    ),
    loopback: z.object({ ipv4: z.boolean(), ipv6: z.boolean().nullable() }).strict(),
  })
  .strict();

/** Judge the probe output: every expectation, plus the IPv4 loopback control. */
export function judgeNetwork(
  mode: 'loopback' | 'allowList',
  output: z.infer<typeof probeOutputSchema>,
  durationMs: number,
): NetworkVerdict {
  const failures: string[] = [];
  for (const probe of output.probes) {
    if (probe.observed !== probe.expected) {
      failures.push(`${probe.label} ${probe.address} is ${probe.observed}, expected ${probe.expected}`);
    }
  }
  if (!output.loopback.ipv4)
    failures.push('the loopback control failed: 127.0.0.1 is not reachable inside the sandbox');
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
