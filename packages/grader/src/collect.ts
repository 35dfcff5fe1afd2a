import path from 'node:path';
import { createMisbehavior, escapeForDisplay, misbehaviorRecordSchema, parseOptions } from '@karotte/base';
import type { KillableGroup } from '@karotte/limits';
import { z } from 'zod';
import type { CollectorCustody, MisbehaviorEntry, StudentHandle, SubmissionCollector } from './collector.js';
import { createDefaultCollector } from './default-collector.js';
import { elapsed, evaluateJudge, faultFromError } from './judge.js';
import type { Judge } from './judge.js';
import { limitHitSchema, networkCheckSchema, VERDICT_SCHEMA_VERSION, verdictSchema } from './verdict.js';
import type {
  CustodySummary,
  HostFault,
  JudgeReport,
  LimitHit,
  NetworkCheck,
  ReapSummary,
  ReclaimSummary,
  Verdict,
} from './verdict.js';

const relativePath = z
  .string()
  .min(1)
  .refine((p) => {
    const normal = path.posix.normalize(p);
    return (
      !path.posix.isAbsolute(normal) && normal !== '..' && !normal.startsWith('../') && !p.includes('\0')
    );
  }, 'must be a relative path inside the working directory');

const judgeSchema = z.custom<Judge>(
  (value) => typeof value === 'object' && value !== null && typeof (value as Judge).evaluate === 'function',
  'must be a judge (createExecutableJudge, createRegexJudge, allOf, ...)',
);

export const gradeOptionsSchema = z
  .object({
    /** The judge (or composite). */
    judge: judgeSchema,
    /** A root-only directory of custody copies, or null when there is none. */
    submissionDir: z
      .string()
      .refine((p) => path.isAbsolute(p), 'must be absolute')
      .nullable(),
    /**
     * The task's hidden data.
     * @default null
     */
    hiddenDir: z
      .string()
      .refine((p) => path.isAbsolute(p), 'must be absolute')
      .nullable()
      .default(null),
    /**
     * The student's final answer.
     * @default null
     */
    finalAnswer: z.string().nullable().default(null),
    /**
     * Score at or above which the run passes.
     * @default 1
     */
    passThreshold: z.number().min(0).max(1).default(1),
    /**
     * Misbehavior recorded earlier in the episode (limit hits, refused tools). Any entry
     * makes the run `failed` with score 0.
     * @default []
     */
    misbehavior: z.array(misbehaviorRecordSchema).default([]),
    /**
     * The student's limit hits during the episode, for the record.
     * @default []
     */
    limitHits: z.array(limitHitSchema).default([]),
    /**
     * The student sandbox's network check, for the record.
     * @default null
     */
    network: networkCheckSchema.nullable().default(null),
    /**
     * The student's uid, for the record.
     * @default null
     */
    studentUid: z.number().int().nullable().default(null),
    /** Cancels grading; a cancelled run is `error` (`ABORTED`). */
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();
export type GradeOptions = z.input<typeof gradeOptionsSchema>;

export const collectAndGradeOptionsSchema = z
  .object({
    student: z
      .object({
        uid: z.number().int().min(1000).max(4_294_967_294),
        group: z
          .custom<KillableGroup>(
            (v) => typeof v === 'object' && v !== null && typeof (v as KillableGroup).killAll === 'function',
            'must be a KillableGroup',
          )
          .optional(),
        pidNamespaceInitPid: z.number().int().positive().optional(),
        workDir: z.string().refine((p) => path.isAbsolute(p), 'must be absolute'),
      })
      .strict(),
    /** Declared submission paths, relative to `student.workDir`. */
    submission: z.array(relativePath).max(10_000),
    judge: judgeSchema,
    hiddenDir: gradeOptionsSchema.shape.hiddenDir,
    finalAnswer: gradeOptionsSchema.shape.finalAnswer,
    passThreshold: gradeOptionsSchema.shape.passThreshold,
    misbehavior: gradeOptionsSchema.shape.misbehavior,
    limitHits: gradeOptionsSchema.shape.limitHits,
    network: gradeOptionsSchema.shape.network,
    /**
     * Disk directories swept (with file-guard's link-safe `reclaim()`) for files the student
     * left outside its working directory. IPC objects and RAM-backed files (every read-write
     * tmpfs) are always reclaimed. Leave empty when the student's sandbox gives it a private
     * `/tmp` (the sweep is then pure cost); the grader's own sandbox never sees these places.
     * @default []
     */
    reclaimRoots: z.array(z.string().refine((p) => path.isAbsolute(p), 'must be absolute')).default([]),
    collector: z
      .custom<SubmissionCollector>(
        (v) =>
          typeof v === 'object' &&
          v !== null &&
          ['reap', 'reclaim', 'takeCustody'].every(
            (k) => typeof (v as Record<string, unknown>)[k] === 'function',
          ),
        'must implement reap, reclaim and takeCustody',
      )
      .optional(),
    /**
     * Keep the custody directory after grading (its path is in the verdict); else remove it.
     * @default false
     */
    keepCustody: z.boolean().default(false),
    abortSignal: z.instanceof(AbortSignal).optional(),
  })
  .strict();
export type CollectAndGradeOptions = z.input<typeof collectAndGradeOptionsSchema>;

interface VerdictParts {
  readonly startedAt: Date;
  readonly started: number;
  readonly passThreshold: number;
  readonly misbehavior: readonly MisbehaviorEntry[];
  readonly limitHits: readonly LimitHit[];
  readonly studentUid: number | null;
  readonly network: NetworkCheck | null;
  readonly reap?: ReapSummary | null;
  readonly reclaim?: ReclaimSummary | null;
  readonly custody?: CustodySummary | null;
  readonly judge?: JudgeReport | null;
  readonly fault?: HostFault | null;
  readonly timings?: { reapMs?: number; reclaimMs?: number; custodyMs?: number; judgeMs?: number };
}

/**
 * Assemble a verdict. The rule: a host fault is `error`; any misbehavior (including a judge
 * failing on the submission, recorded as `GRADER_FAILED`) is `failed` with score 0; otherwise
 * the judge's score decides against `passThreshold`.
 */
function buildVerdict(parts: VerdictParts): Verdict {
  const judge = parts.judge ?? null;
  const misbehavior = [...parts.misbehavior];
  let fault = parts.fault ?? null;
  if (fault === null && judge?.status === 'error' && judge.error !== null) fault = judge.error;
  if (fault === null && judge?.status === 'failed' && judge.failure !== null) {
    const f = judge.failure;
    misbehavior.push(createMisbehavior('GRADER_FAILED', `${f.judge}: ${f.reason}: ${f.message}`));
  }
  const judgeScore = judge?.status === 'scored' ? judge.score : null;
  let status: Verdict['status'];
  let score = 0;
  if (fault !== null) status = 'error';
  else if (misbehavior.length > 0 || judgeScore === null) status = 'failed';
  else {
    score = judgeScore;
    status = judgeScore >= parts.passThreshold ? 'passed' : 'failed';
  }
  const t = parts.timings ?? {};
  const verdict: Verdict = {
    schemaVersion: VERDICT_SCHEMA_VERSION,
    status,
    score,
    judgeScore,
    passThreshold: parts.passThreshold,
    misbehavior,
    graderFailure: judge?.status === 'failed' ? judge.failure : null,
    error: fault,
    limitHits: [...parts.limitHits, ...(judge?.limitHits ?? [])],
    student: { uid: parts.studentUid },
    reap: parts.reap ?? null,
    reclaim: parts.reclaim ?? null,
    custody: parts.custody ?? null,
    network: parts.network,
    confinement: judge?.confinement ?? null,
    judge,
    timings: {
      reapMs: t.reapMs ?? null,
      reclaimMs: t.reclaimMs ?? null,
      custodyMs: t.custodyMs ?? null,
      judgeMs: t.judgeMs ?? null,
      totalMs: elapsed(parts.started),
    },
    startedAt: parts.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
  };
  // A verdict that does not match its own published schema is a harness bug: say so as
  // `error` rather than hand out a malformed record.
  const checked = verdictSchema.safeParse(verdict);
  if (checked.success) return checked.data;
  const issue = checked.error.issues[0];
  return {
    ...verdict,
    status: 'error',
    score: 0,
    judge: null,
    confinement: null,
    misbehavior: verdict.misbehavior.filter((m) => misbehaviorRecordSchema.safeParse(m).success),
    limitHits: verdict.limitHits.filter((l) => limitHitSchema.safeParse(l).success),
    graderFailure: null,
    error: {
      code: 'INTERNAL',
      message: escapeForDisplay(
        `verdict failed its schema at ${issue?.path.join('.') ?? '?'}: ${issue?.message ?? ''}`,
      ),
      phase: 'verdict',
    },
  };
}

function hostFault(error: unknown, phase: HostFault['phase'], fallbackCode: string): HostFault {
  const fault = faultFromError(error);
  return {
    code: fault.code === 'INTERNAL' ? fallbackCode : fault.code,
    message: escapeForDisplay(fault.message, 2048),
    phase,
  };
}

function abortedFault(phase: HostFault['phase']): HostFault {
  return { code: 'ABORTED', message: 'grading was cancelled', phase };
}

/**
 * Judge a submission that is already in custody, and return the verdict. Use
 * {@link collectAndGrade} unless the caller has reaped, reclaimed and taken custody itself.
 * Never throws for anything the student or the grader did.
 *
 * @throws BadArgumentError on invalid options.
 */
export async function gradeSubmission(options: GradeOptions): Promise<Verdict> {
  const o = parseOptions(gradeOptionsSchema, options, 'grade options');
  const started = performance.now();
  const startedAt = new Date();
  const abortSignal = o.abortSignal ?? new AbortController().signal;
  const parts = {
    startedAt,
    started,
    passThreshold: o.passThreshold,
    misbehavior: o.misbehavior,
    limitHits: o.limitHits,
    studentUid: o.studentUid,
    network: o.network,
  };
  if (o.misbehavior.length > 0) return buildVerdict(parts);
  const judgeStarted = performance.now();
  const judge = await evaluateJudge(o.judge, {
    submissionDir: o.submissionDir,
    hiddenDir: o.hiddenDir,
    finalAnswer: o.finalAnswer,
    abortSignal,
    path: o.judge.name,
  });
  return buildVerdict({ ...parts, judge, timings: { judgeMs: elapsed(judgeStarted) } });
}

/**
 * The whole collect-then-grade sequence as one call, in this order and never another:
 *
 * 1. **reap** every student process and confirm none is left (a survivor is `UNREAPABLE`:
 *    failed, score 0, nothing is judged);
 * 2. **reclaim** what the student owns outside its processes (IPC objects, RAM-backed files
 *    in `reclaimRoots`), so nothing it left can act during grading;
 * 3. **custody**: copy the declared submission paths into a fresh root-only directory,
 *    refusing links, FIFOs, devices and budget overruns (each is misbehavior: failed, score 0);
 * 4. **judge** the custody copy only. No judge ever sees a student-writable path.
 *
 * Returns the verdict: `passed`/`failed` for everything the student or a grader did,
 * `error` only for host or environment faults. Never throws for those.
 *
 * @throws BadArgumentError on invalid options.
 */
export async function collectAndGrade(options: CollectAndGradeOptions): Promise<Verdict> {
  const o = parseOptions(collectAndGradeOptionsSchema, options, 'collectAndGrade options');
  const started = performance.now();
  const startedAt = new Date();
  const abortSignal = o.abortSignal ?? new AbortController().signal;
  const collector = o.collector ?? createDefaultCollector();
  const student: StudentHandle = o.student;
  const timings: { reapMs?: number; reclaimMs?: number; custodyMs?: number; judgeMs?: number } = {};
  const misbehavior: MisbehaviorEntry[] = [...o.misbehavior];
  const base = {
    startedAt,
    started,
    passThreshold: o.passThreshold,
    limitHits: o.limitHits,
    studentUid: o.student.uid,
    network: o.network,
  };

  // 1. Reap and confirm.
  let reap: ReapSummary;
  const reapStarted = performance.now();
  try {
    const result = await collector.reap(student, { abortSignal });
    timings.reapMs = elapsed(reapStarted);
    reap = {
      confirmed: result.confirmed,
      mechanism: result.mechanism,
      killed: result.killed,
      survivors: [...result.survivors],
      durationMs: timings.reapMs,
      record: result.record,
    };
    misbehavior.push(...result.misbehavior);
    if (!result.confirmed && !misbehavior.some((m) => m.code === 'UNREAPABLE')) {
      misbehavior.push(
        createMisbehavior(
          'UNREAPABLE',
          `student processes survived reaping: ${result.survivors.slice(0, 20).join(', ')}`,
        ),
      );
    }
  } catch (error) {
    timings.reapMs = elapsed(reapStarted);
    return buildVerdict({ ...base, misbehavior, timings, fault: hostFault(error, 'reap', 'REAP_FAILED') });
  }
  if (abortSignal.aborted)
    return buildVerdict({ ...base, misbehavior, reap, timings, fault: abortedFault('reap') });
  // A live student process could still change files: never copy or judge after a failed reap.
  if (!reap.confirmed) return buildVerdict({ ...base, misbehavior, reap, timings });

  // 2. Reclaim.
  let reclaim: ReclaimSummary;
  const reclaimStarted = performance.now();
  try {
    const result = await collector.reclaim(student, { roots: o.reclaimRoots, abortSignal });
    timings.reclaimMs = elapsed(reclaimStarted);
    reclaim = { ok: result.ok, durationMs: timings.reclaimMs, record: result.record };
    misbehavior.push(...result.misbehavior);
  } catch (error) {
    timings.reclaimMs = elapsed(reclaimStarted);
    return buildVerdict({
      ...base,
      misbehavior,
      reap,
      timings,
      fault: hostFault(error, 'reclaim', 'RECLAIM_FAILED'),
    });
  }
  if (abortSignal.aborted)
    return buildVerdict({ ...base, misbehavior, reap, reclaim, timings, fault: abortedFault('reclaim') });

  // 3. Custody (nothing declared: an answer-only task; judges see no submission directory).
  if (o.submission.length === 0) {
    if (misbehavior.length > 0) return buildVerdict({ ...base, misbehavior, reap, reclaim, timings });
    const judgeStarted = performance.now();
    const judge = await evaluateJudge(o.judge, {
      submissionDir: null,
      hiddenDir: o.hiddenDir,
      finalAnswer: o.finalAnswer,
      abortSignal,
      path: o.judge.name,
    });
    timings.judgeMs = elapsed(judgeStarted);
    return buildVerdict({ ...base, misbehavior, reap, reclaim, judge, timings });
  }
  let custody: CollectorCustody;
  const custodyStarted = performance.now();
  try {
    custody = await collector.takeCustody(student, o.submission, { abortSignal });
  } catch (error) {
    timings.custodyMs = elapsed(custodyStarted);
    return buildVerdict({
      ...base,
      misbehavior,
      reap,
      reclaim,
      timings,
      fault: hostFault(error, 'custody', 'CUSTODY_FAILED'),
    });
  }
  timings.custodyMs = elapsed(custodyStarted);
  const custodySummary: CustodySummary = {
    dir: custody.dir,
    entries: custody.entries,
    missing: custody.missing.map((m) => escapeForDisplay(m)),
    totalBytes: custody.totalBytes,
    durationMs: timings.custodyMs,
    manifest: custody.manifest,
  };
  misbehavior.push(...custody.misbehavior);
  try {
    if (abortSignal.aborted) {
      return buildVerdict({
        ...base,
        misbehavior,
        reap,
        reclaim,
        custody: custodySummary,
        timings,
        fault: abortedFault('custody'),
      });
    }
    // Misbehavior already scores 0: nothing the judge says could change that.
    if (misbehavior.length > 0) {
      return buildVerdict({ ...base, misbehavior, reap, reclaim, custody: custodySummary, timings });
    }
    if (custody.dir === null) {
      const fault: HostFault = {
        code: 'CUSTODY_FAILED',
        message: 'custody kept no copy and named no refusal',
        phase: 'custody',
      };
      return buildVerdict({ ...base, misbehavior, reap, reclaim, custody: custodySummary, timings, fault });
    }

    // 4. Judge the custody copy.
    const judgeStarted = performance.now();
    const judge = await evaluateJudge(o.judge, {
      submissionDir: custody.dir,
      hiddenDir: o.hiddenDir,
      finalAnswer: o.finalAnswer,
      abortSignal,
      path: o.judge.name,
    });
    timings.judgeMs = elapsed(judgeStarted);
    return buildVerdict({ ...base, misbehavior, reap, reclaim, custody: custodySummary, judge, timings });
  } finally {
    if (!o.keepCustody) await custody.dispose().catch(() => undefined);
  }
}
