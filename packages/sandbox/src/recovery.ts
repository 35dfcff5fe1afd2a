// Crash recovery: what a dead harness's sandbox left (its namespace init, processes, limits,
// veth, state directory), reclaimed from its manifest and lease before its uid is reused.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { bootId, isSameProcessAlive, killPid, resolveTrustedBinary } from '@karotte/base';
import { tearDownAllowList } from './allow-list.js';
import { listLeaseFiles, reclaimStaleLease, type LeaseFile, type LeaseRecord } from './confinement/lease.js';
import { SandboxError } from './errors.js';
import { reapStudent, recoverStaleLimits } from './seams.js';

/** Crash-recovery record of one sandbox, in `<stateDir>/<id>/manifest.json`. */
const manifestSchema = z
  .object({
    sandboxId: z.string(),
    uid: z.number().int(),
    initPid: z.number().int(),
    initStartTime: z.number().int(),
    /** The boot the init ran in; absent in manifests of earlier versions (read as this boot). */
    initBootId: z.string().min(1).max(64).optional(),
    veth: z.object({ hostEnd: z.string(), peerNetns: z.string().nullable() }).strict().nullable(),
  })
  .strict();
export type Manifest = z.infer<typeof manifestSchema>;

/** Reclaim a dead harness's sandbox from its manifest and leases. */
export async function reclaimDeadSandbox(
  stateDir: string,
  record: LeaseRecord | undefined,
  uid: number,
): Promise<void> {
  const ip = resolveTrustedBinary('ip');
  let manifest: Manifest | undefined;
  const dir = record === undefined ? undefined : path.join(stateDir, record.sandboxId);
  if (dir !== undefined) {
    try {
      const text = readFileSync(path.join(dir, 'manifest.json'), 'utf8');
      // eslint-disable-next-line no-restricted-syntax -- root-only file this package wrote, validated by the schema
      const parsed = manifestSchema.safeParse(JSON.parse(text));
      if (parsed.success) manifest = parsed.data;
    } catch {
      // no manifest yet: the harness died before the namespaces existed
    }
  }
  if (
    manifest !== undefined &&
    manifest.initPid > 1 &&
    isSameProcessAlive({
      pid: manifest.initPid,
      startTicks: manifest.initStartTime,
      bootId: manifest.initBootId ?? bootId(),
    })
  ) {
    killPid(manifest.initPid);
  }
  await recoverStaleLimits();
  const record2 = await reapStudent({ uid, limits: undefined, initPid: undefined, deadlineMs: 30_000 });
  if (!record2.confirmedEmpty) {
    throw new SandboxError('TEARDOWN_INCOMPLETE', `processes of leftover uid ${uid} could not be reaped`);
  }
  if (manifest?.veth) {
    await tearDownAllowList({
      ip,
      hostEnd: manifest.veth.hostEnd,
      peerNetns: manifest.veth.peerNetns ?? undefined,
    });
  }
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}

/** The uid lock files of the sandboxes of `stateDir`. */
export function leaseDir(stateDir: string): string {
  return path.join(stateDir, 'uids');
}

/** Every sandbox uid lease in `stateDir`, with whether its harness is gone. */
export function listLeases(stateDir: string): LeaseFile[] {
  return listLeaseFiles(leaseDir(stateDir));
}

/** Reclaim every lease in `stateDir` whose harness died. Returns the uids reclaimed. */
export async function reclaimStaleSandboxes(stateDir: string): Promise<number[]> {
  const out: number[] = [];
  for (const lease of listLeases(stateDir)) {
    if (!lease.stale) continue;
    if (
      await reclaimStaleLease(leaseDir(stateDir), lease.uid, (record, uid) =>
        reclaimDeadSandbox(stateDir, record, uid),
      )
    ) {
      out.push(lease.uid);
    }
  }
  return out;
}
