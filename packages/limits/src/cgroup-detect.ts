// Which cgroup hierarchy this process can create episode groups in: v2 when the unified
// hierarchy offers the memory and pids controllers at our own group, else v1 when memory,
// pids and freezer are mounted read-write, else none (the watchdog tier).
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parseMountInfo } from '@karotte/base';
import type { MountInfoEntry } from '@karotte/base';

/** Name of the leaf the harness moves into on cgroup v2 before it delegates controllers. */
const HARNESS_LEAF = 'karotte-harness';

/**
 * Where episode groups are created. Detected by {@link detectCgroups}; a caller may pass its
 * own (a custom mount, or a fake tree in tests).
 */
export const cgroupHierarchySchema = z.discriminatedUnion('version', [
  z
    .object({
      version: z.literal(2),
      /** Mount point of the unified hierarchy. */
      mountPoint: z.string().startsWith('/'),
      /** Directory under which episode groups are created (our own group, or its parent when we sit in the harness leaf). */
      base: z.string().startsWith('/'),
      /** Leaf the harness processes move into before controllers are enabled in `base`; null when `base` is the hierarchy root. */
      harnessLeaf: z.string().startsWith('/').nullable(),
    })
    .strict(),
  z
    .object({
      version: z.literal(1),
      /** Parent directory for groups in the memory hierarchy. */
      memory: z.string().startsWith('/'),
      /** Parent directory for groups in the pids hierarchy. */
      pids: z.string().startsWith('/'),
      /** Parent directory for groups in the freezer hierarchy (needed for an atomic kill). */
      freezer: z.string().startsWith('/'),
      /** Parent directory for groups in the cpu hierarchy, or null when it is not mounted. */
      cpu: z.string().startsWith('/').nullable(),
    })
    .strict(),
]);

/** Where episode groups are created (see {@link cgroupHierarchySchema}). */
export type CgroupHierarchy = z.infer<typeof cgroupHierarchySchema>;

/** Result of {@link detectCgroups}: the hierarchy to use, or null with the reasons. */
export interface CgroupDetection {
  readonly hierarchy: CgroupHierarchy | null;
  /** Why v2 or v1 was not used, one line each (empty when v2 is used). */
  readonly reasons: readonly string[];
}

/** Parse /proc/<pid>/cgroup text into controller → path (v2 under the key ''). */
export function parseProcCgroup(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    const cgroupPath = line.slice(second + 1);
    if (controllers === '') out.set('', cgroupPath);
    for (const controller of controllers.split(',')) if (controller !== '') out.set(controller, cgroupPath);
  }
  return out;
}

/** The directory of `cgroupPath` seen through `mount`, or null when the mount does not show it. */
function dirThroughMount(mount: MountInfoEntry, cgroupPath: string): string | null {
  const root = mount.root === '/' ? '' : mount.root;
  if (cgroupPath !== root && !cgroupPath.startsWith(`${root}/`) && root !== '') return null;
  const relative = cgroupPath.slice(root.length).replace(/\/+$/, '');
  return relative === '' ? mount.mountPoint : path.join(mount.mountPoint, relative);
}

/** Inputs of detection (the real /proc files unless given; tests pass their own). */
export interface DetectInputs {
  readonly mountInfo?: string;
  readonly procCgroup?: string;
}

/**
 * Detect the cgroup hierarchy this process can use. Prefers v2 when the unified hierarchy
 * offers `memory` and `pids` at our group; otherwise v1 when `memory`, `pids` and `freezer`
 * are mounted read-write and show our group. Never remounts anything.
 */
export function detectCgroups(inputs: DetectInputs = {}): CgroupDetection {
  const mounts = parseMountInfo(inputs.mountInfo ?? fs.readFileSync('/proc/self/mountinfo', 'utf8')).entries;
  const own = parseProcCgroup(inputs.procCgroup ?? fs.readFileSync('/proc/self/cgroup', 'utf8'));
  const reasons: string[] = [];

  // cgroup v2.
  const unified = mounts.filter((mount) => mount.fsType === 'cgroup2');
  const ownV2 = own.get('');
  if (unified.length === 0) reasons.push('cgroup v2: not mounted');
  else if (ownV2 === undefined) reasons.push('cgroup v2: this process has no v2 group');
  for (const mount of unified) {
    if (ownV2 === undefined) break;
    if (mount.readOnly) {
      reasons.push(`cgroup v2: ${mount.mountPoint} is mounted read-only`);
      continue;
    }
    const ownDir = dirThroughMount(mount, ownV2);
    if (ownDir === null) {
      reasons.push(`cgroup v2: ${mount.mountPoint} does not show this process's group ${ownV2}`);
      continue;
    }
    const base = path.basename(ownDir) === HARNESS_LEAF ? path.dirname(ownDir) : ownDir;
    let controllers: string[];
    try {
      controllers = fs.readFileSync(path.join(base, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
    } catch {
      reasons.push(`cgroup v2: cannot read ${path.join(base, 'cgroup.controllers')}`);
      continue;
    }
    const missing = ['memory', 'pids'].filter((name) => !controllers.includes(name));
    if (missing.length > 0) {
      reasons.push(
        `cgroup v2: controller${missing.length > 1 ? 's' : ''} ${missing.join(', ')} not available at ${base}`,
      );
      continue;
    }
    const harnessLeaf = base === mount.mountPoint ? null : path.join(base, HARNESS_LEAF);
    return { hierarchy: { version: 2, mountPoint: mount.mountPoint, base, harnessLeaf }, reasons: [] };
  }

  // cgroup v1.
  const v1Dir = (controller: string): string | null => {
    const cgroupPath = own.get(controller);
    if (cgroupPath === undefined) {
      reasons.push(`cgroup v1: this process has no ${controller} group`);
      return null;
    }
    const candidates = mounts.filter(
      (mount) => mount.fsType === 'cgroup' && mount.superOptions.includes(controller),
    );
    if (candidates.length === 0) {
      reasons.push(`cgroup v1: the ${controller} controller is not mounted`);
      return null;
    }
    for (const mount of candidates) {
      if (mount.readOnly) continue;
      const dir = dirThroughMount(mount, cgroupPath);
      if (dir !== null) return dir;
    }
    reasons.push(`cgroup v1: no read-write ${controller} mount shows this process's group ${cgroupPath}`);
    return null;
  };
  const memory = v1Dir('memory');
  const pids = v1Dir('pids');
  const freezer = v1Dir('freezer');
  const cpu = own.has('cpu') ? v1Dir('cpu') : null;
  if (memory !== null && pids !== null && freezer !== null) {
    return { hierarchy: { version: 1, memory, pids, freezer, cpu }, reasons };
  }
  return { hierarchy: null, reasons };
}
