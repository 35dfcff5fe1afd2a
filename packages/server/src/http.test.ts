import { describe, expect, it } from 'vitest';
import { HttpProblem, parseBody } from './http.js';
import { createEpisodeRequestSchema, turnRequestSchema } from './schemas.js';

function problemOf(fn: () => unknown): HttpProblem {
  try {
    fn();
  } catch (error) {
    if (error instanceof HttpProblem) return error;
    throw error;
  }
  throw new Error('expected an HttpProblem');
}

describe('parseBody', () => {
  it('accepts a valid body and treats an empty one as {}', () => {
    expect(parseBody(createEpisodeRequestSchema, '{"taskId": "t", "seed": 3}')).toEqual({
      taskId: 't',
      seed: 3,
    });
    expect(problemOf(() => parseBody(createEpisodeRequestSchema, '')).field).toBe('taskId');
  });

  it('refuses malformed JSON with INVALID_JSON', () => {
    const problem = problemOf(() => parseBody(createEpisodeRequestSchema, '{"taskId": '));
    expect([problem.status, problem.code]).toEqual([400, 'INVALID_JSON']);
  });

  it('names an unknown field, even a nested one', () => {
    expect(problemOf(() => parseBody(createEpisodeRequestSchema, '{"taskId": "t", "sede": 1}')).field).toBe(
      'sede',
    );
    const nested = problemOf(() =>
      parseBody(
        turnRequestSchema,
        '{"turnId": "a", "message": {"role": "assistant", "content": "x", "extra": 1}}',
      ),
    );
    expect([nested.status, nested.code, nested.field]).toEqual([400, 'INVALID_REQUEST', 'message.extra']);
  });

  it('names a field of the wrong type', () => {
    const problem = problemOf(() => parseBody(createEpisodeRequestSchema, '{"taskId": "t", "seed": 1.5}'));
    expect(problem.field).toBe('seed');
  });

  it('refuses JSON nested past the depth limit without a crash', () => {
    const deep = `${'['.repeat(100)}${']'.repeat(100)}`;
    expect(problemOf(() => parseBody(createEpisodeRequestSchema, deep)).code).toBe('INVALID_JSON');
  });
});
