// The arithmetic of `karotte eval`'s summary (contract section 16): per task and overall, over
// the episodes that have a result. Pure functions, unit-tested against worked figures.

/** What the summary needs of one episode: its result.json, and the model usage of its transcript. */
export interface EpisodeRecord {
  readonly status: 'passed' | 'failed' | 'error';
  readonly score: number;
  /** Misbehavior codes, as result.json lists them (a code may repeat). */
  readonly misbehavior: readonly string[];
  /** The code of an `error` episode's fault (`AGENT_FAILED`, …); null otherwise. */
  readonly errorCode: string | null;
  readonly durationMs: number;
  readonly turns: number;
  readonly usage: TokenUsage;
}

/** Tokens the model endpoint reported, summed over model calls. */
export interface TokenUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens: number;
  readonly reasoningTokens: number;
  /** Model calls answered (each turn one). */
  readonly calls: number;
}

/** A task's figures. `meanScore`, `passRate` and `passAtK` count only episodes that reached a verdict. */
export interface TaskSummary {
  readonly id: string;
  /** Episodes with a result (a verdict or `error`). */
  readonly episodes: number;
  /** Episodes that reached a verdict (`passed` or `failed`). */
  readonly verdicts: number;
  readonly passed: number;
  readonly failed: number;
  /** Mean score of the verdicts; null when no episode reached one. */
  readonly meanScore: number | null;
  /** Share of the verdicts that passed; null when no episode reached one. */
  readonly passRate: number | null;
  /**
   * The unbiased pass@k estimator for k = 1, 2, 4, … up to the episodes planned per task, and
   * that number itself; null for a k above the task's verdicts.
   */
  readonly passAtK: Readonly<Record<string, number | null>>;
  /** Episodes that ended in `error`: reported apart, never averaged in as a 0. */
  readonly errors: number;
  /** The `error` episodes by fault code. */
  readonly errorCodes: Readonly<Record<string, number>>;
  /** Each misbehavior code and the number of episodes that recorded it. */
  readonly misbehavior: Readonly<Record<string, number>>;
  readonly usage: TokenUsage;
  /** The episodes' wall time, summed, in milliseconds. */
  readonly durationMs: number;
  /** Mean turns per episode (every episode with a result). */
  readonly meanTurns: number | null;
}

/** Every task's figures, averaged: each task that reached a verdict weighs the same. */
export interface OverallSummary {
  readonly tasks: number;
  readonly episodes: number;
  readonly verdicts: number;
  readonly passed: number;
  readonly failed: number;
  /** Mean of the tasks' mean scores (tasks without a verdict left out); null when none has one. */
  readonly meanScore: number | null;
  /** Mean of the tasks' pass rates, likewise. */
  readonly passRate: number | null;
  /** Mean of the tasks' pass@k, for each k, over the tasks where it is defined. */
  readonly passAtK: Readonly<Record<string, number | null>>;
  readonly errors: number;
  readonly errorCodes: Readonly<Record<string, number>>;
  readonly misbehavior: Readonly<Record<string, number>>;
  readonly usage: TokenUsage;
  readonly durationMs: number;
}

export const NO_USAGE: TokenUsage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  reasoningTokens: 0,
  calls: 0,
});

/** The sum of two usages. */
function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
    calls: a.calls + b.calls,
  };
}

/**
 * The unbiased estimator of pass@k (Chen et al. 2021, "Evaluating Large Language Models
 * Trained on Code"): the chance that at least one of `k` episodes drawn without replacement
 * from `n`, of which `c` passed, passes: `1 - C(n-c, k) / C(n, k)`, computed as the product
 * `∏_{i=n-c+1}^{n} (1 - k/i)` so no binomial coefficient overflows. Null when `k > n` (the
 * estimator is undefined with fewer samples than `k`).
 */
export function passAtK(n: number, c: number, k: number): number | null {
  if (
    !Number.isInteger(n) ||
    !Number.isInteger(c) ||
    !Number.isInteger(k) ||
    n < 0 ||
    c < 0 ||
    c > n ||
    k < 1
  ) {
    throw new RangeError(`passAtK needs integers 0 <= c <= n and k >= 1 (got n=${n}, c=${c}, k=${k})`);
  }
  if (k > n) return null;
  if (n - c < k) return 1;
  let fail = 1;
  for (let i = n - c + 1; i <= n; i += 1) fail *= 1 - k / i;
  return 1 - fail;
}

/** The k of pass@k reported for `planned` episodes per task: 1, 2, 4, … below it, then it. */
export function passAtKValues(planned: number): number[] {
  const values: number[] = [];
  for (let k = 1; k < planned; k *= 2) values.push(k);
  if (planned >= 1) values.push(planned);
  return values;
}

function countBy(values: Iterable<string>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return sortedRecord(counts);
}

function sortedRecord(record: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((sum, v) => sum + v, 0) / values.length;
}

/** A task's figures from its episodes' records; `planned` is the episodes asked for per task (`--n`). */
export function summarizeTask(id: string, records: readonly EpisodeRecord[], planned: number): TaskSummary {
  const verdicts = records.filter((r) => r.status !== 'error');
  const passed = verdicts.filter((r) => r.status === 'passed').length;
  const errored = records.filter((r) => r.status === 'error');
  const passAt: Record<string, number | null> = {};
  for (const k of passAtKValues(planned)) passAt[String(k)] = passAtK(verdicts.length, passed, k);
  return {
    id,
    episodes: records.length,
    verdicts: verdicts.length,
    passed,
    failed: verdicts.length - passed,
    meanScore: mean(verdicts.map((r) => r.score)),
    passRate: verdicts.length === 0 ? null : passed / verdicts.length,
    passAtK: passAt,
    errors: errored.length,
    errorCodes: countBy(errored.map((r) => r.errorCode ?? 'UNKNOWN')),
    // An episode that recorded a code twice (two symlinks) counts once for it.
    misbehavior: countBy(records.flatMap((r) => [...new Set(r.misbehavior)])),
    usage: records.reduce((sum, r) => addUsage(sum, r.usage), NO_USAGE),
    durationMs: records.reduce((sum, r) => sum + r.durationMs, 0),
    meanTurns: mean(records.map((r) => r.turns)),
  };
}

/**
 * A summary's figures as `--json` and summary.json print them (contract section 16 gives
 * `meanScore` and `passRate` as numbers): where no episode reached a verdict, both are 0, and
 * its `verdicts` of 0 tells that apart from a score of 0.
 */
export function contractFigures<
  T extends { readonly meanScore: number | null; readonly passRate: number | null },
>(summary: T): Omit<T, 'meanScore' | 'passRate'> & { readonly meanScore: number; readonly passRate: number } {
  return { ...summary, meanScore: summary.meanScore ?? 0, passRate: summary.passRate ?? 0 };
}

/** The overall figures of the tasks' summaries. */
export function summarizeOverall(tasks: readonly TaskSummary[]): OverallSummary {
  const withVerdicts = tasks.filter((t) => t.verdicts > 0);
  const passAt: Record<string, number | null> = {};
  const ks = new Set(tasks.flatMap((t) => Object.keys(t.passAtK)));
  for (const k of [...ks].sort((a, b) => Number(a) - Number(b))) {
    passAt[k] = mean(tasks.flatMap((t) => (typeof t.passAtK[k] === 'number' ? [t.passAtK[k]] : [])));
  }
  const merge = (pick: (t: TaskSummary) => Readonly<Record<string, number>>): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const task of tasks)
      for (const [code, n] of Object.entries(pick(task))) out[code] = (out[code] ?? 0) + n;
    return sortedRecord(out);
  };
  return {
    tasks: tasks.length,
    episodes: tasks.reduce((sum, t) => sum + t.episodes, 0),
    verdicts: tasks.reduce((sum, t) => sum + t.verdicts, 0),
    passed: tasks.reduce((sum, t) => sum + t.passed, 0),
    failed: tasks.reduce((sum, t) => sum + t.failed, 0),
    meanScore: mean(withVerdicts.map((t) => t.meanScore!)),
    passRate: mean(withVerdicts.map((t) => t.passRate!)),
    passAtK: passAt,
    errors: tasks.reduce((sum, t) => sum + t.errors, 0),
    errorCodes: merge((t) => t.errorCodes),
    misbehavior: merge((t) => t.misbehavior),
    usage: tasks.reduce((sum, t) => addUsage(sum, t.usage), NO_USAGE),
    durationMs: tasks.reduce((sum, t) => sum + t.durationMs, 0),
  };
}
