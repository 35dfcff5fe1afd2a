import { misbehaviorRecordSchema } from '@karotte/base';
import { z } from 'zod';

/** Bumped only on a breaking change of the verdict's shape; additions keep it. */
export const VERDICT_SCHEMA_VERSION = 1;

/**
 * Why a judge failed on the student's submission. Every reason scores 0 and is recorded as a
 * `GRADER_FAILED` misbehavior; none turns a run into `error`.
 */
const GRADER_FAILURE_REASONS = [
  /** The grader ran past its wall-clock limit and was killed with its whole process tree. */
  'TIMEOUT',
  /** The grader exited with a non-zero code. */
  'EXIT_CODE',
  /** The grader was killed by a signal (other than a limit the harness enforced). */
  'SIGNAL',
  /** The grader hit its memory limit (the kernel's OOM killer fired in its cgroup). */
  'MEMORY_LIMIT',
  /** The grader hit its process limit. */
  'PIDS_LIMIT',
  /** The grader wrote more than its output cap to stdout or stderr and was killed. */
  'OUTPUT_LIMIT',
  /** The grader exited 0 but wrote no score file. */
  'SCORE_FILE_MISSING',
  /** The score file is a symlink, FIFO, directory or other non-regular file. */
  'SCORE_FILE_NOT_REGULAR',
  /** The score file is over the byte bound. */
  'SCORE_FILE_TOO_LARGE',
  /** The score file is not valid UTF-8. */
  'SCORE_NOT_UTF8',
  /** The score file is not strict JSON (NaN, trailing data, duplicate keys, 1e309, too deep). */
  'SCORE_NOT_JSON',
  /** The score file is JSON but not `{"score": finite number in [0,1], "metadata"?: object}`. */
  'SCORE_INVALID',
  /** The score file's metadata is over the byte bound. */
  'METADATA_TOO_LARGE',
  /** The score file's metadata is nested deeper than the bound. */
  'METADATA_TOO_DEEP',
  /** A function judge threw, or returned something that is not a valid score. */
  'JUDGE_THREW',
  /** A judge's input (final answer, submission file) is over its byte bound. */
  'INPUT_TOO_LARGE',
  /** A file the judge needed from the submission is a refused or unreadable entry. */
  'INPUT_UNREADABLE',
  /** A rubric model's reply was not a valid assessment. */
  'REPLY_INVALID',
] as const;

export type GraderFailureReason = (typeof GRADER_FAILURE_REASONS)[number];

/** How a limit is enforced: the kernel prevents it, a watchdog reaps after the fact, or nothing. */
const limitContractSchema = z.enum(['prevented', 'detected_and_reaped', 'not_supported']);

const jsonValueSchema = z.json();

/** Details of a judge that failed on the student's submission. Strings are escaped for display. */
const graderFailureSchema = z
  .object({
    /** Path of the judge in the judge tree, e.g. `all/executable:grade.mjs`. */
    judge: z.string(),
    reason: z.enum(GRADER_FAILURE_REASONS),
    /** One escaped sentence. */
    message: z.string(),
    exitCode: z.number().int().nullable(),
    /** Signal name (`SIGKILL`) when the grader died of a signal. */
    signal: z.string().nullable(),
    timedOut: z.boolean(),
    /** Last bytes of stderr, escaped (at most 4 KiB before escaping). */
    stderrTail: z.string(),
    /** Last bytes of stdout, escaped (at most 4 KiB before escaping). */
    stdoutTail: z.string(),
  })
  .strict();
export type GraderFailure = z.infer<typeof graderFailureSchema>;

/** A host or environment fault. Only these make a run `error`. */
const hostFaultSchema = z
  .object({
    /** A {@link GraderErrorCode}, or a code of a sibling package's error. */
    code: z.string(),
    message: z.string(),
    /** The phase in which the fault happened. */
    phase: z.enum(['reap', 'reclaim', 'custody', 'judge', 'verdict']),
  })
  .strict();
export type HostFault = z.infer<typeof hostFaultSchema>;

/** A limit that fired, for the student (during the episode) or for a grader. */
export const limitHitSchema = z
  .object({
    scope: z.enum(['student', 'grader']),
    limit: z.enum(['memory', 'pids', 'wall_time', 'output', 'disk', 'cpu']),
    /** The limit, in bytes (memory, output, disk), a count (pids) or ms (wall_time, cpu). */
    limitValue: z.number().nullable(),
    /** What was observed (peak bytes, process count, elapsed ms), when known. */
    observed: z.number().nullable(),
    enforcement: limitContractSchema,
    message: z.string(),
  })
  .strict();
export type LimitHit = z.infer<typeof limitHitSchema>;

/** How a judge was confined, and what enforces each of its limits. */
const confinementSchema = z
  .object({
    /**
     * `sandbox`: a fresh unprivileged uid in its own pid, mount, ipc, uts and network
     * namespaces and cgroup, seeing copies only. `process`: a child process of the current
     * user with a clean environment, killed by process group. `in_process`: runs inside the
     * harness (function, regex and rubric judges).
     */
    level: z.enum(['sandbox', 'process', 'in_process']),
    uid: z.number().int().nullable(),
    namespaces: z.array(z.enum(['pid', 'mount', 'ipc', 'uts', 'net'])),
    memory: limitContractSchema,
    pids: limitContractSchema,
    wallTime: limitContractSchema,
    output: limitContractSchema,
    /** The grader cannot reach any network (its own empty network namespace). */
    networkIsolated: z.boolean(),
  })
  .strict();
export type Confinement = z.infer<typeof confinementSchema>;

const JUDGE_KINDS = ['executable', 'function', 'regex', 'rubric', 'all', 'any', 'weighted'] as const;
export type JudgeKind = (typeof JUDGE_KINDS)[number];

/** What one judge (or composite) concluded. Composites carry their children. */
export interface JudgeReport {
  readonly name: string;
  readonly kind: JudgeKind;
  /** `scored`: a valid score. `failed`: the judge failed on the submission. `error`: host fault. */
  readonly status: 'scored' | 'failed' | 'error';
  /** The score when `scored`, else 0. */
  readonly score: number;
  /** Escaped metadata from the judge (bounded in size and depth). */
  readonly metadata: Record<string, z.infer<typeof jsonValueSchema>>;
  readonly failure: GraderFailure | null;
  readonly error: HostFault | null;
  readonly limitHits: readonly LimitHit[];
  readonly confinement: Confinement;
  readonly durationMs: number;
  readonly weight?: number | undefined;
  /** Where an executable judge's time went. */
  readonly timings?: ExecutableTimings | undefined;
  readonly children?: readonly JudgeReport[] | undefined;
}

/** Phases of an executable judge: setup (copies, cgroup, namespaces), the grader's own run, teardown. */
const executableTimingsSchema = z
  .object({
    /** From the call to the grader's start (private directory, copies, cgroup, namespaces, mounts). */
    setupMs: z.number().nonnegative(),
    /** The grader's own run, from its start to its exit (or kill). */
    runMs: z.number().nonnegative(),
    /** From the grader's exit to the report (proof the cgroup is empty, unmount, removal). */
    teardownMs: z.number().nonnegative(),
    /**
     * The setup made ahead by `prepare()` (private directory, uid, cgroup, namespaces, mounts),
     * before the evaluation's call and outside `setupMs`; absent when nothing was prepared.
     */
    preparedMs: z.number().nonnegative().optional(),
  })
  .strict();
type ExecutableTimings = z.infer<typeof executableTimingsSchema>;

const judgeReportSchema: z.ZodType<JudgeReport> = z
  .object({
    name: z.string(),
    kind: z.enum(JUDGE_KINDS),
    status: z.enum(['scored', 'failed', 'error']),
    score: z.number().min(0).max(1),
    metadata: z.record(z.string(), jsonValueSchema),
    failure: graderFailureSchema.nullable(),
    error: hostFaultSchema.nullable(),
    limitHits: z.array(limitHitSchema),
    confinement: confinementSchema,
    durationMs: z.number().nonnegative(),
    /** Weight in a `weighted` composite. */
    weight: z.number().optional(),
    timings: executableTimingsSchema.optional(),
    get children() {
      return z.array(judgeReportSchema).optional();
    },
  })
  .strict();

/** Proof that no student process was alive when custody started. */
const reapSummarySchema = z
  .object({
    /** True when a complete sweep found no student process after the kill. */
    confirmed: z.boolean(),
    /** How processes were killed (`cgroup.kill`, `freeze-kill-thaw`, `pidns-init`, `kill-1`, ...). */
    mechanism: z.string().nullable(),
    /** Processes signalled, when known. */
    killed: z.number().int().nullable(),
    /** Pids still alive at the deadline (empty when confirmed). */
    survivors: z.array(z.number().int()),
    durationMs: z.number().nonnegative(),
    /** The reaper's own record, as JSON. */
    record: jsonValueSchema,
  })
  .strict();
export type ReapSummary = z.infer<typeof reapSummarySchema>;

/** What was reclaimed from the student (IPC objects, RAM-backed and other leftover files). */
const reclaimSummarySchema = z
  .object({
    ok: z.boolean(),
    durationMs: z.number().nonnegative(),
    record: jsonValueSchema,
  })
  .strict();
export type ReclaimSummary = z.infer<typeof reclaimSummarySchema>;

/** One entry of the custody copy. Paths are relative to the submission root, escaped. */
const custodyEntrySchema = z
  .object({
    path: z.string(),
    type: z.enum(['file', 'directory', 'symlink']),
    bytes: z.number().int().nonnegative(),
    sha256: z.string().nullable(),
  })
  .strict();

/** The custody copy the judges saw. */
const custodySummarySchema = z
  .object({
    /** The root-only custody directory, or null when custody was refused (nothing was kept). */
    dir: z.string().nullable(),
    entries: z.array(custodyEntrySchema),
    /** Declared submission paths the student never created (escaped). */
    missing: z.array(z.string()),
    totalBytes: z.number().int().nonnegative(),
    durationMs: z.number().nonnegative(),
    /** file-guard's full custody manifest, as JSON. */
    manifest: jsonValueSchema,
  })
  .strict();
export type CustodySummary = z.infer<typeof custodySummarySchema>;

/** The network check of the student's sandbox, as the caller reports it. */
export const networkCheckSchema = z
  .object({
    checked: z.boolean(),
    /** True when every outside route lookup failed and the loopback control succeeded. */
    isolated: z.boolean().nullable(),
    detail: z.string(),
  })
  .strict();
export type NetworkCheck = z.infer<typeof networkCheckSchema>;

const timingsSchema = z
  .object({
    reapMs: z.number().nonnegative().nullable(),
    reclaimMs: z.number().nonnegative().nullable(),
    custodyMs: z.number().nonnegative().nullable(),
    judgeMs: z.number().nonnegative().nullable(),
    totalMs: z.number().nonnegative(),
  })
  .strict();

/** The grader's verdict on one run: what happened and why. Published as JSON Schema. */
export const verdictSchema = z
  .object({
    schemaVersion: z.literal(VERDICT_SCHEMA_VERSION),
    status: z.enum(['passed', 'failed', 'error']),
    /** The run's score: 0 when failed through misbehavior or grader failure, and on error. */
    score: z.number().min(0).max(1),
    /** The judge's own score before misbehavior zeroed it, or null when no judge scored. */
    judgeScore: z.number().min(0).max(1).nullable(),
    passThreshold: z.number().min(0).max(1),
    /** What the student did that was refused; `GRADER_FAILED` when a judge failed on the submission. */
    misbehavior: z.array(misbehaviorRecordSchema),
    /** The first judge failure, with exit code, signal, timeout and output tails. */
    graderFailure: graderFailureSchema.nullable(),
    /** The host or environment fault that made the run `error`, else null. */
    error: hostFaultSchema.nullable(),
    limitHits: z.array(limitHitSchema),
    student: z.object({ uid: z.number().int().nullable() }).strict(),
    reap: reapSummarySchema.nullable(),
    reclaim: reclaimSummarySchema.nullable(),
    custody: custodySummarySchema.nullable(),
    network: networkCheckSchema.nullable(),
    /** The weakest confinement among the judges that ran. */
    confinement: confinementSchema.nullable(),
    judge: judgeReportSchema.nullable(),
    timings: timingsSchema,
    startedAt: z.iso.datetime(),
    finishedAt: z.iso.datetime(),
  })
  .strict()
  .meta({
    title: 'Karotte grader verdict',
    description:
      'What @karotte/grader concluded about one run: status, score, misbehavior, grader failure, host fault, limit hits, reap record, custody manifest, network check, confinement and timings.',
  });

export type Verdict = z.infer<typeof verdictSchema>;

/** The verdict schema as JSON Schema (draft 2020-12), as published in `schema/verdict.schema.json`. */
export function verdictJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(verdictSchema, { target: 'draft-2020-12', unrepresentable: 'throw' });
}
