import { rm } from 'node:fs/promises';
import { escapeForDisplay } from '@karotte/base';
import { reclaim, takeCustody } from '@karotte/file-guard';
import type { CustodyOptions } from '@karotte/file-guard';
import { reap, reclaimLeftovers } from '@karotte/proc-reaper';
import type { ConfirmedReapRecord, ReapOptions, ReclaimLeftoversOptions } from '@karotte/proc-reaper';
import type { Sandbox } from '@karotte/sandbox';
import type {
  CollectorCustody,
  CollectorReap,
  CollectorReclaim,
  StudentHandle,
  SubmissionCollector,
} from './collector.js';
import type { NetworkCheck } from './verdict.js';
import type { JsonValue } from '@karotte/base';

/** Tuning of the default collector; each part goes to the primitive that does the work. */
export interface DefaultCollectorOptions {
  /**
   * Options of proc-reaper's `reap()` (deadline, helper timeout, ...).
   * @default {}
   */
  readonly reap?: Omit<ReapOptions, 'abortSignal'>;
  /**
   * Options of proc-reaper's `reclaimLeftovers()` (SysV, mqueues, RAM-backed files).
   * @default {}
   */
  readonly leftovers?: Omit<ReclaimLeftoversOptions, 'abortSignal' | 'exclude'>;
  /**
   * Options of file-guard's `takeCustody()` (budgets, file-type rules, destination parent).
   * @default {}
   */
  readonly custody?: Omit<CustodyOptions, 'root' | 'studentUid' | 'abortSignal'>;
  /**
   * Who reaps. A sandbox that knows its own pid namespace reaps itself (`sandbox.reap()`).
   * @default proc-reaper's `reap({ uid, group, pidNamespaceInitPid })`
   */
  readonly reaper?: (student: StudentHandle, abortSignal: AbortSignal) => Promise<ConfirmedReapRecord>;
}

/** A JSON copy of a primitive's record (our own serialisation of a trusted object). */
function toJson(value: unknown): JsonValue {
  // eslint-disable-next-line no-restricted-syntax -- round-trips our own JSON.stringify output
  return JSON.parse(JSON.stringify(value)) as JsonValue;
}

/**
 * The collector assembled from the real primitives, in the order `collectAndGrade` calls it:
 * proc-reaper's `reap()` (confirmed tier: group kill, PID-namespace kill, in-cohort
 * `kill(-1)`, a complete sweep), proc-reaper's `reclaimLeftovers()` (SysV IPC by creator,
 * POSIX mqueues, RAM-backed files) plus file-guard's `reclaim()` over the scratch roots, and
 * file-guard's `takeCustody()` into a fresh root-only directory.
 */
export function createDefaultCollector(options: DefaultCollectorOptions = {}): SubmissionCollector {
  return {
    reap: async (student, { abortSignal }): Promise<CollectorReap> => {
      const record =
        options.reaper === undefined
          ? await reap(
              {
                uid: student.uid,
                ...(student.group === undefined ? {} : { group: student.group }),
                ...(student.pidNamespaceInitPid === undefined
                  ? {}
                  : { pidNamespaceInitPid: student.pidNamespaceInitPid }),
              },
              // Custody comes next: the kernel's exit work must be over (proc-reaper's awaitExit).
              { awaitExit: true, ...options.reap, abortSignal },
            )
          : await options.reaper(student, abortSignal);
      const mechanisms = (['cgroup', 'pidns', 'inCohort', 'sweep'] as const).filter(
        (m) => record.killed[m] > 0,
      );
      return {
        confirmed: record.confirmedEmpty,
        mechanism: mechanisms.length === 0 ? 'none-alive' : mechanisms.join('+'),
        killed: record.killed.cgroup + record.killed.pidns + record.killed.inCohort + record.killed.sweep,
        survivors: record.survivors.map((p) => p.pid),
        record: toJson(record),
        misbehavior: record.misbehavior,
      };
    },
    reclaim: async (student, { roots, abortSignal }): Promise<CollectorReclaim> => {
      // IPC objects and RAM-backed files first (they cost memory), then the scratch roots.
      const leftovers = await reclaimLeftovers(student.uid, {
        ...options.leftovers,
        exclude: [student.workDir],
        abortSignal,
      });
      const files =
        roots.length === 0
          ? null
          : await reclaim(student.uid, { roots: [...roots], exclude: [student.workDir], abortSignal });
      return {
        ok: leftovers.complete && (files?.complete ?? true),
        record: toJson({ leftovers, files }),
        misbehavior: [
          ...leftovers.misbehavior,
          ...(files?.misbehavior === undefined ? [] : [files.misbehavior]),
        ],
      };
    },
    takeCustody: async (student, submission, { abortSignal }): Promise<CollectorCustody> => {
      const result = await takeCustody(submission, {
        ...options.custody,
        root: student.workDir,
        studentUid: student.uid,
        abortSignal,
      });
      const manifest = result.manifest;
      const destination = result.destination;
      return {
        dir: destination ?? null,
        entries: manifest.entries.map((e) => ({
          path: e.path,
          type: e.kind,
          bytes: e.size ?? 0,
          sha256: e.sha256 ?? null,
        })),
        missing: manifest.absent,
        totalBytes: manifest.totals.bytes,
        misbehavior: result.misbehavior,
        manifest: toJson(manifest),
        dispose: async () => {
          if (destination !== undefined) await rm(destination, { recursive: true, force: true });
        },
      };
    },
  };
}

/**
 * The collector for a student in a `@karotte/sandbox` sandbox: the sandbox reaps itself
 * (`sandbox.reap()`: its group, its pid namespace, in-cohort kill, a confirmed sweep), then
 * reclaim and custody as in {@link createDefaultCollector}. Pair it with
 * {@link studentFromSandbox}.
 */
export function createSandboxCollector(
  sandbox: Pick<Sandbox, 'reap'>,
  options: Omit<DefaultCollectorOptions, 'reaper' | 'reap'> = {},
): SubmissionCollector {
  return createDefaultCollector({ ...options, reaper: () => sandbox.reap() });
}

/** The student handle of a sandbox: its uid, its group (kill and list only), its working directory on the host. */
export function studentFromSandbox(sandbox: Pick<Sandbox, 'handle'>): StudentHandle {
  return sandbox.handle;
}

/** The verdict's network record from a sandbox's network check (`sandbox.networkCheck`). */
export function networkCheckFromSandbox(sandbox: Pick<Sandbox, 'networkCheck'>): NetworkCheck {
  const check = sandbox.networkCheck;
  const detail = check.ok
    ? `${check.mode}: ${check.probes.length} route lookups blocked as required, loopback control passed`
    : `${check.mode}: ${check.failures.join('; ')}`;
  // Failures quote what the probe saw inside the sandbox: shown escaped and bounded.
  return { checked: true, isolated: check.ok, detail: escapeForDisplay(detail, 8192) };
}
