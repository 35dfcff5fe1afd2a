import { misbehaviorRecordSchema } from '@karotte/base';
import { z } from 'zod';

const count = z.number().int().nonnegative();
const isoTime = z.iso.datetime();

/** A process named in a record: pid and its (escaped, student-controlled) name. */
const recordedProcessSchema = z.object({ pid: z.number().int().positive(), name: z.string() }).strict();

/** One named process in a record. */
export type RecordedProcess = z.infer<typeof recordedProcessSchema>;

/**
 * Record of a `reap()` (tier `confirmed`): what each mechanism killed, how many passes it took,
 * and whether emptiness was proven. JSON-serialisable, for the verdict.
 */
export const confirmedReapRecordSchema = z
  .object({
    tier: z.literal('confirmed'),
    target: z
      .object({
        uid: z.number().int().positive().nullable(),
        group: z.string().nullable(),
        pidNamespaceInitPid: z.number().int().positive().nullable(),
      })
      .strict(),
    /**
     * True only when a pass proved that nothing of the target can run again: every process of
     * it has exited or has SIGKILL pending (`dying`).
     */
    confirmedEmpty: z.boolean(),
    /**
     * Processes killed by each mechanism. `cgroup` is what the group kill reported (signalled
     * members on v1, members seen before `cgroup.kill` on v2). `inCohort` counts processes seen
     * alive just before the in-cohort kill and gone after it (kill(-1) itself reports no count).
     * `pidns` counts killed PID-namespace inits and student processes in foreign PID
     * namespaces; `sweep` counts processes the root sweep still had to kill.
     */
    killed: z.object({ cgroup: count, pidns: count, inCohort: count, sweep: count }).strict(),
    /**
     * Processes of the target still being torn down by the kernel when emptiness was
     * confirmed: SIGKILL taken or pending, so none runs user code again (a process freeing a
     * large memory can take a second to exit). 0 in records written before the field.
     */
    dying: count.default(0),
    /** Reap passes run (a pass: group kill, namespace kill, in-cohort kill, sweep). */
    passes: count,
    /** Runs of the in-cohort helper and how each ended. */
    inCohort: z
      .object({
        runs: count,
        confirmed: count,
        timedOut: count,
        signalled: count,
        failed: count,
        /** kill(-1) rounds run in total by the confirmed runs. */
        rounds: count,
      })
      .strict(),
    /** /proc walks that could not account for every entry (re-walked, never trusted). */
    incompleteWalks: count,
    /** Processes the root sweep had to kill (bounded to the first 64). */
    swept: z.array(recordedProcessSchema),
    /** When reaping started and when emptiness was confirmed (null when it never was). */
    startedAt: isoTime,
    confirmedAt: isoTime.nullable(),
    durationMs: z.number().nonnegative(),
    /** Processes still alive at the deadline (bounded to the first 64). */
    survivors: z.array(recordedProcessSchema),
    /** Host-side problems met on the way (a failed group kill, an incomplete walk). */
    problems: z.array(z.string()),
    /** `UNREAPABLE` when emptiness was not proven by the deadline; empty otherwise. */
    misbehavior: z.array(misbehaviorRecordSchema),
  })
  .strict();

/** Record of a `reap()`. */
export type ConfirmedReapRecord = z.infer<typeof confirmedReapRecordSchema>;

/**
 * Record of a `reapBestEffort()` (tier `best_effort`). Never confirms: `confirmedEmpty` is
 * always false, and `misses` says what this tier cannot see.
 */
const bestEffortReapRecordSchema = z
  .object({
    tier: z.literal('best_effort'),
    target: z.object({ pid: z.number().int().positive() }).strict(),
    confirmedEmpty: z.literal(false),
    killed: z.object({ processGroup: count, tree: count, session: count }).strict(),
    passes: count,
    startedAt: isoTime,
    durationMs: z.number().nonnegative(),
    /** Processes of the tree, group or session still seen alive when it gave up (bounded to 64). */
    survivorsSeen: z.array(recordedProcessSchema),
    /** What this tier cannot see or kill, in plain words. */
    misses: z.array(z.string()),
  })
  .strict();

/** Record of a `reapBestEffort()`. */
export type BestEffortReapRecord = z.infer<typeof bestEffortReapRecordSchema>;

/** Either record, told apart by `tier`. */
export const reapRecordSchema = z.discriminatedUnion('tier', [
  confirmedReapRecordSchema,
  bestEffortReapRecordSchema,
]);

/** Either reap record. */
export type ReapRecord = z.infer<typeof reapRecordSchema>;
