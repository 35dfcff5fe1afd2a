import fs from 'node:fs';
import path from 'node:path';
import { createMisbehavior, SystemError } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { gradeSubmission } from './collect.js';
import { createFunctionJudge } from './judges/function.js';
import { verdictJsonSchema, verdictSchema } from './verdict.js';

describe('published JSON Schema', () => {
  it('schema/verdict.schema.json matches the zod schema (run `pnpm --filter @karotte/grader schema` after a change)', () => {
    const file = path.join(import.meta.dirname, '..', 'schema', 'verdict.schema.json');

    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual(verdictJsonSchema());
  });

  it('is draft 2020-12 and closed (no unknown fields)', () => {
    const schema = verdictJsonSchema();
    expect(schema['$schema']).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema['additionalProperties']).toBe(false);
    expect(schema['required']).toEqual(
      expect.arrayContaining(['status', 'score', 'misbehavior', 'graderFailure', 'error']),
    );
  });
});

describe('verdict rules (gradeSubmission)', () => {
  const judge = (score: number) => createFunctionJudge(() => score);

  it('passes at or above the threshold (default 1)', async () => {
    const verdict = await gradeSubmission({ judge: judge(1), submissionDir: null });
    expect(verdict).toMatchObject({
      status: 'passed',
      score: 1,
      judgeScore: 1,
      passThreshold: 1,
      misbehavior: [],
      error: null,
    });
    expect(verdictSchema.parse(verdict)).toEqual(verdict);
    expect(
      (await gradeSubmission({ judge: judge(0.6), submissionDir: null, passThreshold: 0.5 })).status,
    ).toBe('passed');
  });

  it('fails below the threshold and keeps the score', async () => {
    const verdict = await gradeSubmission({ judge: judge(0.5), submissionDir: null });
    expect(verdict).toMatchObject({
      status: 'failed',
      score: 0.5,
      judgeScore: 0.5,
      misbehavior: [],
      graderFailure: null,
    });
  });

  it('a judge failure is failed, score 0, GRADER_FAILED with the reason', async () => {
    const verdict = await gradeSubmission({
      judge: createFunctionJudge(() => Number.NaN, { name: 'f' }),
      submissionDir: null,
    });
    expect(verdict).toMatchObject({
      status: 'failed',
      score: 0,
      judgeScore: null,
      graderFailure: { reason: 'JUDGE_THREW', judge: 'f' },
      misbehavior: [{ code: 'GRADER_FAILED', message: expect.stringContaining('f: JUDGE_THREW') }],
      error: null,
    });
  });

  it('a host fault is error, score 0', async () => {
    const verdict = await gradeSubmission({
      judge: createFunctionJudge(() => {
        throw new SystemError('EIO on hidden data');
      }),
      submissionDir: null,
    });
    expect(verdict).toMatchObject({
      status: 'error',
      score: 0,
      error: { code: 'SYSTEM_ERROR', phase: 'judge' },
    });
  });

  it('earlier misbehavior is failed, score 0, and the judge never runs', async () => {
    let ran = false;
    const verdict = await gradeSubmission({
      judge: createFunctionJudge(() => {
        ran = true;
        return 1;
      }),
      submissionDir: null,
      misbehavior: [createMisbehavior('MEMORY_LIMIT', 'student hit 1 GiB')],
    });
    expect(verdict).toMatchObject({
      status: 'failed',
      score: 0,
      misbehavior: [{ code: 'MEMORY_LIMIT' }],
      judge: null,
    });
    expect(ran).toBe(false);
  });

  it('a cancelled grading is error ABORTED', async () => {
    const controller = new AbortController();
    controller.abort();
    const verdict = await gradeSubmission({
      judge: judge(1),
      submissionDir: null,
      abortSignal: controller.signal,
    });
    expect(verdict).toMatchObject({ status: 'error', error: { code: 'ABORTED' } });
  });

  it('refuses bad options with the field named', async () => {
    await expect(gradeSubmission({ judge: judge(1), submissionDir: null, passThreshold: 2 })).rejects.toThrow(
      /passThreshold/,
    );
    await expect(gradeSubmission({ judge: {} as never, submissionDir: null })).rejects.toThrow(/judge/);
  });
});
