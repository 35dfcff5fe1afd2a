import { BadArgumentError } from '@karotte/base';
import { childPath, elapsed, evaluateJudge, preflightJudge, prepareJudge } from '../judge.js';
import type { Judge, JudgeContext, PreparedJudge, PrepareOptions } from '../judge.js';
import type { Confinement, JudgeKind, JudgeReport } from '../verdict.js';

/** Options of a composite judge. */
export interface CompositeOptions {
  /**
   * Name in reports.
   * @default the kind (`all`, `any`, `weighted`)
   */
  readonly name?: string;
}

/** A judge with its weight in a `weighted` composite. */
export interface WeightedJudge {
  readonly judge: Judge;
  /** A positive, finite weight. */
  readonly weight: number;
}

/** Runtime check for callers without TypeScript (no narrowing to any[]). */
function isNonEmptyList(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0;
}

const LEVEL_ORDER: Record<Confinement['level'], number> = { in_process: 0, process: 1, sandbox: 2 };

/** The weakest confinement among reports (the one a verdict must admit to). */
function weakestConfinement(reports: readonly JudgeReport[]): Confinement | null {
  let weakest: Confinement | null = null;
  for (const report of reports) {
    if (weakest === null || LEVEL_ORDER[report.confinement.level] < LEVEL_ORDER[weakest.level])
      weakest = report.confinement;
  }
  return weakest;
}

/** Every child's preflight, in order (the first refusal is thrown). */
async function preflightAll(judges: readonly Judge[]): Promise<void> {
  for (const judge of judges) await preflightJudge(judge);
}

function checkJudges(judges: readonly unknown[], field: string): asserts judges is readonly Judge[] {
  if (!isNonEmptyList(judges))
    throw new BadArgumentError(`${field} must be a non-empty array of judges`, { field });
  judges.forEach((judge, index) => {
    if (typeof judge !== 'object' || judge === null || typeof (judge as Judge).evaluate !== 'function') {
      throw new BadArgumentError(`${field}[${index}] is not a judge`, { field: `${field}[${index}]` });
    }
  });
}

/**
 * Run children in order and combine. Shared rules: a child `error` (host fault) makes the
 * composite `error`; a child `failed` (a grader failure on the submission) makes it `failed`
 * with score 0, because such a failure is the student's; the rest combine their scores.
 * `stopEarly` ends the run once the outcome cannot change.
 */
async function runComposite(
  kind: JudgeKind,
  name: string,
  children: readonly Child[],
  context: JudgeContext,
  combine: Combine,
  stopEarly: (score: number) => boolean,
): Promise<JudgeReport> {
  const startedAt = performance.now();
  const reports: JudgeReport[] = [];
  const names = new Map<string, number>();
  for (const child of children) {
    const seen = names.get(child.judge.name) ?? 0;
    names.set(child.judge.name, seen + 1);
    const label = seen === 0 ? child.judge.name : `${child.judge.name}#${seen + 1}`;
    const report = await evaluateJudge(child.judge, { ...context, path: childPath(context.path, label) });
    reports.push(child.weight === undefined ? report : { ...report, weight: child.weight });
    if (report.status !== 'scored' || stopEarly(report.score)) break;
  }
  const confinement = weakestConfinement(reports)!;
  const limitHits = reports.flatMap((r) => r.limitHits);
  const base = {
    name,
    kind,
    metadata: {},
    limitHits,
    confinement,
    durationMs: elapsed(startedAt),
    children: reports,
  };
  const errored = reports.find((r) => r.status === 'error');
  if (errored !== undefined)
    return { ...base, status: 'error', score: 0, failure: null, error: errored.error };
  const failed = reports.find((r) => r.status === 'failed');
  if (failed !== undefined)
    return { ...base, status: 'failed', score: 0, failure: failed.failure, error: null };
  const score = combine(reports.map((r, i) => ({ score: r.score, weight: children[i]!.weight ?? 1 })));
  return { ...base, status: 'scored', score: Math.min(1, Math.max(0, score)), failure: null, error: null };
}

type Child = { readonly judge: Judge; readonly weight?: number };
type Combine = (scores: readonly { score: number; weight: number }[]) => number;

/**
 * A composite over `children`: preflight checks each; prepare makes every child that can be
 * ahead at once (all or none: when one fails, the others are released and its fault thrown),
 * and returns the same composite over the prepared children.
 */
function composite(
  kind: JudgeKind,
  name: string,
  children: readonly Child[],
  combine: Combine,
  stopEarly: (score: number) => boolean,
): Judge {
  return {
    kind,
    name,
    preflight: () => preflightAll(children.map((c) => c.judge)),
    evaluate: (context) => runComposite(kind, name, children, context, combine, stopEarly),
    prepare: async (options: PrepareOptions = {}): Promise<PreparedJudge> => {
      const settled = await Promise.allSettled(children.map((c) => prepareJudge(c.judge, options)));
      const made = settled.flatMap((r) => (r.status === 'fulfilled' && r.value !== null ? [r.value] : []));
      const refused = settled.find((r) => r.status === 'rejected');
      if (refused !== undefined) {
        await Promise.all(made.map((p) => p.dispose()));
        throw refused.reason;
      }
      const prepared = children.map((c, i) => {
        const r = settled[i] as PromiseFulfilledResult<PreparedJudge | null>;
        return { ...c, judge: r.value ?? c.judge };
      });
      return {
        ...composite(kind, name, prepared, combine, stopEarly),
        usable: () => made.every((p) => p.usable()),
        dispose: async () => {
          await Promise.all(made.map((p) => p.dispose()));
        },
      };
    },
  };
}

/**
 * Every judge must pass: the score is the lowest child score. Stops at the first child that
 * scores 0 (the outcome cannot change).
 * @throws BadArgumentError when `judges` is empty or holds a non-judge.
 */
export function allOf(judges: readonly Judge[], options: CompositeOptions = {}): Judge {
  checkJudges(judges, 'judges');
  return composite(
    'all',
    options.name ?? 'all',
    judges.map((judge) => ({ judge })),
    (s) => Math.min(...s.map((x) => x.score)),
    (score) => score === 0,
  );
}

/**
 * One judge is enough: the score is the highest child score. Stops at the first child that
 * scores 1.
 * @throws BadArgumentError when `judges` is empty or holds a non-judge.
 */
export function anyOf(judges: readonly Judge[], options: CompositeOptions = {}): Judge {
  checkJudges(judges, 'judges');
  return composite(
    'any',
    options.name ?? 'any',
    judges.map((judge) => ({ judge })),
    (s) => Math.max(...s.map((x) => x.score)),
    (score) => score === 1,
  );
}

/**
 * A weighted mean of every child's score: Σ weight·score / Σ weight.
 * @throws BadArgumentError when empty, or a weight is not positive and finite.
 */
export function weighted(entries: readonly WeightedJudge[], options: CompositeOptions = {}): Judge {
  if (!isNonEmptyList(entries)) {
    throw new BadArgumentError('entries must be a non-empty array', { field: 'entries' });
  }
  entries.forEach((entry, index) => {
    if (typeof entry.weight !== 'number' || !Number.isFinite(entry.weight) || entry.weight <= 0) {
      throw new BadArgumentError(`entries[${index}].weight must be a positive finite number`, {
        field: `entries[${index}].weight`,
      });
    }
  });
  checkJudges(
    entries.map((e) => e.judge),
    'entries',
  );
  const total = entries.reduce((sum, e) => sum + e.weight, 0);
  return composite(
    'weighted',
    options.name ?? 'weighted',
    entries,
    (s) => s.reduce((sum, x) => sum + x.score * x.weight, 0) / total,
    () => false,
  );
}
