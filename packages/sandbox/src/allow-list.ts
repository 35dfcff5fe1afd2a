import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SandboxError } from './errors.js';
import { ROOT_ENV } from './confinement/world.js';

const run = promisify(execFile);

export interface AllowListPlan {
  readonly ip: string;
  readonly nsenter: string;
  readonly initPid: number;
  readonly hostEnd: string;
  readonly sandboxEnd: string;
  readonly sandboxAddress: string;
  readonly allow: readonly { address: string; port: number }[];
  readonly peerNetns: string | undefined;
}

/** Names of a sandbox's veth pair (at most 15 characters, the kernel's limit). */
export function vethNames(sandboxId: string): { hostEnd: string; sandboxEnd: string } {
  const tag = sandboxId.replace(/[^a-z0-9]/g, '').slice(-8);
  return { hostEnd: `kvh${tag}`, sandboxEnd: `kvs${tag}` };
}

/** The sandbox end's default address: 100.127.x.y, from the sandbox id (never a route anywhere else). */
export function defaultSandboxAddress(sandboxId: string): string {
  let hash = 0;
  for (const char of sandboxId) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return `100.127.${(hash >>> 8) & 0xff}.${(hash & 0xfd) + 1}`;
}

async function ip(plan: AllowListPlan, where: 'sandbox' | 'peer', args: string[]): Promise<void> {
  const argv =
    where === 'sandbox'
      ? [plan.nsenter, [`--target=${String(plan.initPid)}`, '--net', '--', plan.ip, ...args]]
      : [plan.ip, plan.peerNetns === undefined ? args : ['-n', plan.peerNetns, ...args]];
  try {
    await run(argv[0] as string, argv[1] as string[], { env: ROOT_ENV, timeout: 10_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new SandboxError('SETUP_FAILED', `ip ${args.join(' ')} (${where}) failed: ${stderr.trim()}`, {
      cause: error,
    });
  }
}

/**
 * Give the sandbox exactly the allowed addresses: a veth pair whose sandbox end has one /32
 * address and one /32 route per allowed address, and no default route, so a route lookup to
 * anything else still fails. The other end lives in `peerNetns` (or the host's namespace)
 * with a /32 route back. Ports are not filtered (no firewall is assumed on the host): every
 * port of an allowed address is reachable, which the README says plainly.
 */
export async function setUpAllowList(plan: AllowListPlan): Promise<void> {
  await ip(plan, 'peer', [
    'link',
    'add',
    plan.hostEnd,
    'type',
    'veth',
    'peer',
    'name',
    plan.sandboxEnd,
    'netns',
    String(plan.initPid),
  ]);
  // The pair was created in the peer namespace (ip -n runs there), its sandbox end moved in.
  await ip(plan, 'sandbox', ['addr', 'add', `${plan.sandboxAddress}/32`, 'dev', plan.sandboxEnd]);
  await ip(plan, 'sandbox', ['link', 'set', plan.sandboxEnd, 'up']);
  await ip(plan, 'peer', ['link', 'set', plan.hostEnd, 'up']);
  await ip(plan, 'peer', ['route', 'add', `${plan.sandboxAddress}/32`, 'dev', plan.hostEnd]);
  for (const endpoint of plan.allow) {
    await ip(plan, 'sandbox', ['route', 'add', `${endpoint.address}/32`, 'dev', plan.sandboxEnd]);
  }
}

/** Delete the pair (deleting one end deletes both). Idempotent: a missing device is fine. */
export async function tearDownAllowList(options: {
  ip: string;
  hostEnd: string;
  peerNetns: string | undefined;
}): Promise<void> {
  const args =
    options.peerNetns === undefined
      ? ['link', 'del', options.hostEnd]
      : ['-n', options.peerNetns, 'link', 'del', options.hostEnd];
  try {
    await run(options.ip, args, { env: ROOT_ENV, timeout: 10_000 });
  } catch {
    // already gone with the sandbox's namespace
  }
}

/** True when the host end of the pair still exists. */
export async function allowListLinkExists(options: {
  ip: string;
  hostEnd: string;
  peerNetns: string | undefined;
}): Promise<boolean> {
  const args =
    options.peerNetns === undefined
      ? ['link', 'show', options.hostEnd]
      : ['-n', options.peerNetns, 'link', 'show', options.hostEnd];
  try {
    await run(options.ip, args, { env: ROOT_ENV, timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}
