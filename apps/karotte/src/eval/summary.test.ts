import { describe, expect, it } from 'vitest';
import {
  contractFigures,
  NO_USAGE,
  passAtK,
  passAtKValues,
  summarizeOverall,
  summarizeTask,
  type EpisodeRecord,
} from './summary.js';

/** pass@k by brute force: the share of k-subsets of n samples (c of them passing) with a pass. */
function bruteForcePassAtK(n: number, c: number, k: number): number {
  let subsets = 0;
  let hits = 0;
  for (let mask = 0; mask < 1 << n; mask += 1) {
    let size = 0;
    let passes = 0;
    for (let i = 0; i < n; i += 1) {
      if ((mask & (1 << i)) === 0) continue;
      size += 1;
      if (i < c) passes += 1;
    }
    if (size !== k) continue;
    subsets += 1;
    if (passes > 0) hits += 1;
  }
  return hits / subsets;
}

function record(
  status: EpisodeRecord['status'],
  score: number,
  extra: Partial<EpisodeRecord> = {},
): EpisodeRecord {
  return {
    status,
    score,
    misbehavior: [],
    errorCode: status === 'error' ? 'AGENT_FAILED' : null,
    durationMs: 1000,
    turns: 3,
    usage: { inputTokens: 300, outputTokens: 30, cachedInputTokens: 0, reasoningTokens: 0, calls: 3 },
    ...extra,
  };
}

describe('passAtK (the unbiased estimator)', () => {
  it('has the worked values: 1 - C(n-c, k) / C(n, k)', () => {
    expect(passAtK(4, 3, 1)).toBe(0.75);
    expect(passAtK(4, 3, 2)).toBe(1);
    expect(passAtK(4, 2, 2)).toBeCloseTo(1 - 1 / 6, 12);
    expect(passAtK(4, 1, 2)).toBeCloseTo(0.5, 12); // 1 - C(3,2)/C(4,2) = 1 - 3/6
    expect(passAtK(10, 3, 5)).toBeCloseTo(1 - 21 / 252, 12);
    expect(passAtK(4, 0, 4)).toBe(0);
    expect(passAtK(4, 4, 1)).toBe(1);
    // pass@1 is the pass rate.
    expect(passAtK(7, 3, 1)).toBeCloseTo(3 / 7, 12);
  });

  it('equals the share of k-subsets with a pass, for every n up to 10', () => {
    for (let n = 1; n <= 10; n += 1)
      for (let c = 0; c <= n; c += 1)
        for (let k = 1; k <= n; k += 1) expect(passAtK(n, c, k)).toBeCloseTo(bruteForcePassAtK(n, c, k), 12);
  });

  it('is undefined (null) for k above the samples, stays finite for large n, and refuses nonsense', () => {
    expect(passAtK(3, 1, 4)).toBeNull();
    expect(passAtK(0, 0, 1)).toBeNull();
    const large = passAtK(1000, 10, 100)!;
    expect(large).toBeGreaterThan(0.65);
    expect(large).toBeLessThan(0.66);
    expect(() => passAtK(3, 4, 1)).toThrow(RangeError);
    expect(() => passAtK(3, 1, 0)).toThrow(RangeError);
    expect(() => passAtK(2.5, 1, 1)).toThrow(RangeError);
  });

  it('is reported for k = 1, 2, 4, … and the episodes per task', () => {
    expect(passAtKValues(1)).toEqual([1]);
    expect(passAtKValues(4)).toEqual([1, 2, 4]);
    expect(passAtKValues(5)).toEqual([1, 2, 4, 5]);
    expect(passAtKValues(10)).toEqual([1, 2, 4, 8, 10]);
  });
});

describe('summarizeTask', () => {
  it('counts only verdicts in the mean, pass rate and pass@k; errors apart, never as a 0', () => {
    const summary = summarizeTask(
      'quarterly-revenue',
      [
        record('passed', 1),
        record('failed', 0.5),
        record('error', 0, { usage: NO_USAGE, turns: 1 }),
        record('passed', 1, { misbehavior: ['SYMLINK', 'SYMLINK', 'PIDS_LIMIT'] }),
        record('failed', 0, { misbehavior: ['SYMLINK'] }),
      ],
      5,
    );
    expect(summary).toMatchObject({
      id: 'quarterly-revenue',
      episodes: 5,
      verdicts: 4,
      passed: 2,
      failed: 2,
      meanScore: 2.5 / 4,
      passRate: 0.5,
      errors: 1,
      errorCodes: { AGENT_FAILED: 1 },
      // An episode with two SYMLINK records counts once: 2 episodes recorded SYMLINK.
      misbehavior: { PIDS_LIMIT: 1, SYMLINK: 2 },
      usage: { inputTokens: 1200, outputTokens: 120, calls: 12 },
      durationMs: 5000,
      meanTurns: 13 / 5,
    });
    expect(summary.passAtK['1']).toBe(0.5);
    expect(summary.passAtK['2']).toBeCloseTo(1 - 1 / 6, 12);
    expect(summary.passAtK['4']).toBe(1);
    // Only 4 verdicts: pass@5 is undefined.
    expect(summary.passAtK['5']).toBeNull();
  });

  it('leaves the figures undefined for a task whose every episode ended in error', () => {
    const summary = summarizeTask(
      't',
      [record('error', 0), record('error', 0, { errorCode: 'SETUP_FAILED' })],
      2,
    );
    expect(summary).toMatchObject({
      episodes: 2,
      verdicts: 0,
      meanScore: null,
      passRate: null,
      passAtK: { '1': null, '2': null },
      errors: 2,
      errorCodes: { AGENT_FAILED: 1, SETUP_FAILED: 1 },
    });
    // As printed (contract section 16: numbers), told apart from a score of 0 by its verdicts.
    expect(contractFigures(summary)).toMatchObject({ verdicts: 0, meanScore: 0, passRate: 0, errors: 2 });
    expect(contractFigures(summarizeOverall([summary]))).toMatchObject({
      verdicts: 0,
      meanScore: 0,
      passRate: 0,
    });
  });

  it('prints the figures of a task with verdicts as they are', () => {
    const summary = summarizeTask('t', [record('passed', 1), record('failed', 0.5)], 2);
    expect(contractFigures(summary)).toEqual(summary);
  });
});

describe('summarizeOverall', () => {
  it('averages the tasks (each weighs the same), leaving out a task without verdicts, and sums the rest', () => {
    const a = summarizeTask(
      'a',
      [record('passed', 1), record('passed', 1), record('passed', 1), record('failed', 0)],
      4,
    );
    const b = summarizeTask('b', [record('passed', 1), record('failed', 0, { misbehavior: ['SYMLINK'] })], 4);
    const c = summarizeTask('c', [record('error', 0)], 4);
    const overall = summarizeOverall([a, b, c]);
    expect(overall).toMatchObject({
      tasks: 3,
      episodes: 7,
      verdicts: 6,
      passed: 4,
      failed: 2,
      meanScore: (0.75 + 0.5) / 2,
      passRate: (0.75 + 0.5) / 2,
      errors: 1,
      errorCodes: { AGENT_FAILED: 1 },
      misbehavior: { SYMLINK: 1 },
      usage: { inputTokens: 2100, calls: 21 },
    });
    expect(overall.passAtK['1']).toBe((0.75 + 0.5) / 2);
    // pass@2: a is 1, b is 1 - C(1,2)/C(2,2) = 1; pass@4 is defined for a only.
    expect(overall.passAtK['2']).toBe(1);
    expect(overall.passAtK['4']).toBe(1);
  });
});
