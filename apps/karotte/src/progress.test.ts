import { describe, expect, it } from 'vitest';
import type { EpisodeProgress, EpisodeResult } from '@karotte/core';
import { createProgressPrinter, explainResult, progressWanted } from './progress.js';

function printed(events: EpisodeProgress[], width = 80, steps = 1): string[] {
  const lines: string[] = [];
  const print = createProgressPrinter((line) => lines.push(line), { width, steps });
  for (const event of events) print(event);
  return lines.map((line) => {
    expect(line.endsWith('\n')).toBe(true);
    return line.slice(0, -1);
  });
}

describe('createProgressPrinter', () => {
  it('prints the sandbox, each tool call as it starts and ends, collect and grade', () => {
    const lines = printed([
      { type: 'judges_checked', steps: 1 },
      { type: 'sandbox_ready', uid: 2000000123, durationMs: 1234 },
      { type: 'tool_call', step: 0, toolCallId: 'a', name: 'bash', command: 'cd data\nsort -u orders.csv' },
      {
        type: 'tool_result',
        step: 0,
        toolCallId: 'a',
        exitCode: 0,
        timedOut: false,
        durationMs: 35,
        note: null,
      },
      { type: 'tool_call', step: 0, toolCallId: 'b', name: 'bash', command: 'sleep 600' },
      {
        type: 'tool_result',
        step: 0,
        toolCallId: 'b',
        exitCode: null,
        timedOut: true,
        durationMs: 30_000,
        note: null,
      },
      { type: 'tool_call', step: 0, toolCallId: 'c', name: 'python', command: null },
      {
        type: 'tool_result',
        step: 0,
        toolCallId: 'c',
        exitCode: null,
        timedOut: false,
        durationMs: 0,
        note: 'unknown tool python; the only tool is bash',
      },
      { type: 'collect', step: 0, submission: ['answer.txt'] },
      { type: 'graded', step: 0, status: 'failed', score: 0, collectMs: 120, judgeMs: 950 },
    ]);
    expect(lines).toEqual([
      '[sandbox] ready: uid 2000000123 (1.2 s)',
      '[call 1] $ cd data ⏎ sort -u orders.csv',
      '[call 1] exit 0 (35 ms)',
      '[call 2] $ sleep 600',
      '[call 2] timed out after 30.0 s, stopped (the shell goes on)',
      '[call 3] python (not a well-formed bash call)',
      '[call 3] not run: unknown tool python; the only tool is bash',
      "[collect] reaping the student's processes, taking custody of answer.txt",
      '[grade] failed score=0 (collect 120 ms, grade 950 ms)',
    ]);
  });

  it('shortens a long command to the width, and names the step of a multi-step task', () => {
    const [call] = printed(
      [{ type: 'tool_call', step: 1, toolCallId: 'x', name: 'bash', command: `echo ${'y'.repeat(300)}` }],
      40,
      2,
    );
    expect(call).toMatch(/^\[step 2 call 1\] \$ echo y+…$/);
    expect(call!.length).toBe(40);
  });

  it('escapes what the student or the replay chose: a tool name, a command, a note', () => {
    const lines = printed([
      {
        type: 'tool_call',
        step: 0,
        toolCallId: 'a',
        name: 'py\u001b[2J\rthon\u0007\u202egnp.exe',
        command: null,
      },
      {
        type: 'tool_result',
        step: 0,
        toolCallId: 'a',
        exitCode: null,
        timedOut: false,
        durationMs: 0,
        note: 'refused \u001b]0;owned\u0007\rcall 9 passed\u2066x\u2069',
      },
      { type: 'tool_call', step: 0, toolCallId: 'b', name: 'bash', command: 'echo \u001b[2J\u0007\u202eok' },
      {
        type: 'tool_result',
        step: 0,
        toolCallId: 'b',
        exitCode: 0,
        timedOut: false,
        durationMs: 5,
        note: 'output cut\u001b[1A\u009b2K',
      },
    ]);
    expect(lines).toEqual([
      '[call 1] py\\u{1b}[2J\\rthon\\u{7}\\u{202e}gnp.exe (not a well-formed bash call)',
      '[call 1] not run: refused \\u{1b}]0;owned\\u{7}\\rcall 9 passed\\u{2066}x\\u{2069}',
      '[call 2] $ echo \\u{1b}[2J\\u{7}\\u{202e}ok',
      '[call 2] exit 0 (5 ms; output cut\\u{1b}[1A\\u{9b}2K)',
    ]);
    for (const line of lines) expect(line).not.toMatch(TERMINAL_CONTROLS);
  });

  it('keeps a name core escaped already as it is (no double escapes)', () => {
    const [line] = printed([
      { type: 'tool_call', step: 0, toolCallId: 'a', name: 'py\\u{1b}[2J', command: null },
    ]);
    expect(line).toBe('[call 1] py\\u{1b}[2J (not a well-formed bash call)');
  });
});

describe('createProgressPrinter for a model', () => {
  function printedModel(events: EpisodeProgress[], clock: number[]): string[] {
    const lines: string[] = [];
    let tick = 0;
    const print = createProgressPrinter((line) => lines.push(line.slice(0, -1)), {
      width: 100,
      steps: 1,
      model: true,
      now: () => clock[Math.min(tick++, clock.length - 1)]!,
    });
    for (const event of events) print(event);
    return lines;
  }

  it('prints each turn (its number, what it asked for, model time, tokens, elapsed), retries, and names non-bash tools', () => {
    const lines = printedModel(
      [
        { type: 'sandbox_ready', uid: 2000000123, durationMs: 300 },
        {
          type: 'model_retry',
          step: 0,
          attempt: 1,
          httpStatus: 429,
          waitMs: 2000,
          message: 'rate limited\n\u001b[2Jtry later',
        },
        {
          type: 'model_call',
          step: 0,
          turn: 1,
          finishReason: 'tool_calls',
          usage: { inputTokens: 1200, outputTokens: 56 },
          modelMs: 850,
          retryWaitMs: 2100,
          toolCalls: 2,
        },
        { type: 'tool_call', step: 0, toolCallId: 'a', name: 'shell', command: 'ls; cat orders.csv' },
        {
          type: 'tool_result',
          step: 0,
          toolCallId: 'a',
          exitCode: 0,
          timedOut: false,
          durationMs: 9,
          note: null,
        },
        { type: 'tool_call', step: 0, toolCallId: 'b', name: 'str_replace_based_edit_tool', command: null },
        {
          type: 'tool_result',
          step: 0,
          toolCallId: 'b',
          exitCode: null,
          timedOut: false,
          durationMs: 4,
          note: null,
        },
        { type: 'tool_call', step: 0, toolCallId: 'c', name: 'bash', command: 'echo 1 > answer.txt' },
        {
          type: 'model_call',
          step: 0,
          turn: 2,
          finishReason: 'length',
          usage: null,
          modelMs: 12_000,
          retryWaitMs: 0,
          toolCalls: 0,
        },
        {
          type: 'model_call',
          step: 0,
          turn: 3,
          finishReason: 'stop',
          usage: { inputTokens: 10, outputTokens: 1 },
          modelMs: 40,
          retryWaitMs: 0,
          toolCalls: 0,
        },
      ],
      // The printer's start, then one reading per turn line.
      [1000, 13_345, 75_000, 80_000],
    );
    expect(lines).toEqual([
      '[sandbox] ready: uid 2000000123 (300 ms)',
      '[model] attempt 1 failed (HTTP 429), retrying in 2.0 s: rate limited \\u{1b}[2Jtry later',
      '[turn 1] 2 tool calls (model 850 ms, retries 2.1 s, 1200 in / 56 out tokens; elapsed 12.3 s)',
      '[call 1] shell $ ls; cat orders.csv',
      '[call 1] exit 0 (9 ms)',
      '[call 2] str_replace_based_edit_tool',
      '[call 2] answered (4 ms)',
      '[call 3] $ echo 1 > answer.txt',
      '[turn 2] cut at the length limit, no tool call (model 12.0 s; elapsed 1 min 14 s)',
      '[turn 3] answered, no tool call (model 40 ms, 10 in / 1 out tokens; elapsed 1 min 19 s)',
    ]);
    for (const line of lines) expect(line).not.toMatch(TERMINAL_CONTROLS);
  });

  it('prints no turn lines for a replay (the lines stay what they were)', () => {
    const lines = printed([
      {
        type: 'model_call',
        step: 0,
        turn: 1,
        finishReason: 'tool_calls',
        usage: null,
        modelMs: 0,
        retryWaitMs: 0,
        toolCalls: 1,
      },
      { type: 'model_retry', step: 0, attempt: 1, httpStatus: 500, waitMs: 10, message: 'x' },
    ]);
    expect(lines).toEqual([]);
  });
});

/** C0 and C1 controls, DEL, bidi embeddings, overrides and isolates: none may reach a terminal. */
const TERMINAL_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/;

describe('progressWanted', () => {
  it('is on at a terminal, off on a pipe or a file, never with --json unless --progress', () => {
    expect(progressWanted({}, true)).toBe(true);
    expect(progressWanted({}, false)).toBe(false);
    expect(progressWanted({ json: true }, true)).toBe(false);
    expect(progressWanted({ quiet: true }, true)).toBe(false);
    expect(progressWanted({ progress: true }, false)).toBe(true);
    expect(progressWanted({ progress: true, json: true }, false)).toBe(true);
  });
});

/** A result with only what explainResult reads. */
function result(fields: {
  status: EpisodeResult['status'];
  misbehavior?: { code: string; message: string }[];
  judge?: Record<string, unknown> | null;
  judgeScore?: number | null;
}): EpisodeResult {
  return {
    status: fields.status,
    score: 0,
    misbehavior: fields.misbehavior ?? [],
    steps: [
      {
        index: 0,
        verdict: {
          score: 0,
          judgeScore: fields.judgeScore ?? 0,
          passThreshold: 1,
          judge: fields.judge === undefined ? { metadata: {} } : fields.judge,
        },
      },
    ],
  } as unknown as EpisodeResult;
}

describe('explainResult', () => {
  it("gives the grader's own reason for a score of 0", () => {
    expect(
      explainResult(result({ status: 'failed', judge: { metadata: { reason: 'wrong total' } } }), 80),
    ).toEqual(['  why: the grader scored 0 (needs 1 to pass): wrong total']);
  });

  it("finds a reason in a composite's children, else shows the metadata", () => {
    const composite = {
      metadata: {},
      children: [{ metadata: {} }, { metadata: { reason: 'test 3 failed' } }],
    };
    expect(explainResult(result({ status: 'failed', judge: composite }), 80)).toEqual([
      '  why: the grader scored 0 (needs 1 to pass): test 3 failed',
    ]);
    expect(
      explainResult(
        result({ status: 'failed', judge: { metadata: { passed: 3, total: 5 } }, judgeScore: 0.6 }),
        80,
      ),
    ).toEqual(['  why: the grader scored 0.6 (needs 1 to pass): metadata {"passed":3,"total":5}']);
    expect(explainResult(result({ status: 'failed', judge: null }), 80)).toEqual([
      '  why: the submission was not judged (needs 1 to pass)',
    ]);
  });

  it('lists every misbehavior code with its message, wrapped to the width', () => {
    const lines = explainResult(
      result({
        status: 'failed',
        misbehavior: [
          {
            code: 'SYMLINK',
            message: 'answer.txt is a symbolic link (to /etc/hostname); it was not followed',
          },
          { code: 'PIDS_LIMIT', message: 'the pids limit (256) was hit' },
        ],
      }),
      50,
    );
    expect(lines).toEqual([
      '  why: SYMLINK: answer.txt is a symbolic link (to\n       /etc/hostname); it was not followed',
      '  why: PIDS_LIMIT: the pids limit (256) was hit',
    ]);
  });

  it("escapes the grader's reason, its metadata and misbehavior messages", () => {
    const reason = explainResult(
      result({
        status: 'failed',
        judge: { metadata: { reason: 'wrong\u001b[2J\r\u0007 total \u202eexe.txt' } },
      }),
      120,
    );
    expect(reason).toEqual([
      '  why: the grader scored 0 (needs 1 to pass): wrong\\u{1b}[2J \\u{7} total \\u{202e}exe.txt',
    ]);
    const metadata = explainResult(
      result({ status: 'failed', judge: { metadata: { note: '\u009b2J\u2067x' } } }),
      120,
    );
    expect(metadata).toEqual([
      '  why: the grader scored 0 (needs 1 to pass): metadata {"note":"\\u{9b}2J\\u{2067}x"}',
    ]);
    const misbehavior = explainResult(
      result({ status: 'failed', misbehavior: [{ code: 'SYMLINK', message: 'a\u001b[31m\u0007b' }] }),
      120,
    );
    expect(misbehavior).toEqual(['  why: SYMLINK: a\\u{1b}[31m\\u{7}b']);
    for (const line of [...reason, ...metadata, ...misbehavior])
      expect(line.replaceAll('\n', '')).not.toMatch(TERMINAL_CONTROLS);
  });

  it('says nothing for a pass or an error (the summary line holds the error)', () => {
    expect(explainResult(result({ status: 'passed' }), 80)).toEqual([]);
    expect(explainResult(result({ status: 'error' }), 80)).toEqual([]);
  });
});
