// The seam between grading and the primitives that collect a submission, in a module of its
// own: collect.ts uses the default collector and default-collector.ts implements these types,
// so neither imports the other for them.
import type { JsonValue, MisbehaviorRecord, misbehaviorRecordSchema } from '@karotte/base';
import type { KillableGroup } from '@karotte/limits';
import type { z } from 'zod';
import type { CustodySummary } from './verdict.js';

/** A misbehavior record as the primitives' zod schemas produce it. */
export type MisbehaviorEntry = MisbehaviorRecord | z.infer<typeof misbehaviorRecordSchema>;

/** The student whose submission is collected. */
export interface StudentHandle {
  /** The student's uid (>= 1000). */
  readonly uid: number;
  /** The episode's cgroup group, for an atomic kill. */
  readonly group?: KillableGroup | undefined;
  /** Pid (in our namespace) of the init of the student's pid namespace, if it has one. */
  readonly pidNamespaceInitPid?: number | undefined;
  /** The student's working directory; submission paths are relative to it. */
  readonly workDir: string;
}

/** What reaping found. */
export interface CollectorReap {
  readonly confirmed: boolean;
  readonly mechanism: string | null;
  readonly killed: number | null;
  readonly survivors: readonly number[];
  /** The reaper's own record, as JSON. */
  readonly record: JsonValue;
  /** `UNREAPABLE` and the like. */
  readonly misbehavior: readonly MisbehaviorEntry[];
}

/** What reclaiming found. */
export interface CollectorReclaim {
  readonly ok: boolean;
  readonly record: JsonValue;
  readonly misbehavior: readonly MisbehaviorEntry[];
}

/** The custody copy. */
export interface CollectorCustody {
  /** Root-only directory holding the copies at the same relative paths; null when refused. */
  readonly dir: string | null;
  readonly entries: CustodySummary['entries'];
  readonly missing: readonly string[];
  readonly totalBytes: number;
  /** Symlinks, FIFOs, budget overruns, ... */
  readonly misbehavior: readonly MisbehaviorEntry[];
  /** The full manifest, as JSON. */
  readonly manifest: JsonValue;
  /** Remove the custody directory. */
  dispose(): Promise<void>;
}

/**
 * The seam between grading and the primitives that collect a submission: reap (proc-reaper),
 * reclaim (proc-reaper and file-guard) and custody (file-guard). `createDefaultCollector()`
 * assembles the real ones; tests and unusual hosts may supply their own. A method throws only
 * for host faults; everything the student caused is data (`misbehavior`).
 */
export interface SubmissionCollector {
  reap(student: StudentHandle, options: { readonly abortSignal: AbortSignal }): Promise<CollectorReap>;
  reclaim(
    student: StudentHandle,
    options: { readonly roots: readonly string[]; readonly abortSignal: AbortSignal },
  ): Promise<CollectorReclaim>;
  takeCustody(
    student: StudentHandle,
    submission: readonly string[],
    options: { readonly abortSignal: AbortSignal },
  ): Promise<CollectorCustody>;
}
