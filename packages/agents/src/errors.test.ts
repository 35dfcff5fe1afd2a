import { BadArgumentError, KarotteError } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { AgentError } from './errors.js';

describe('AgentError', () => {
  it('takes each kind from its table and keeps status, attempts, field and cause', () => {
    const cause = new Error('inner');
    const error = new AgentError('AGENT_FAILED', 'down', { httpStatus: 503, attempts: 16, cause });
    expect(error).toMatchObject({
      name: 'AgentError',
      code: 'AGENT_FAILED',
      kind: 'system',
      httpStatus: 503,
      attempts: 16,
      field: undefined,
    });
    expect(error.cause).toBe(cause);
    expect(AgentError.kinds).toEqual({
      AGENT_FAILED: 'system',
      ABORTED: 'system',
      INVALID_REPLAY: 'bad_argument',
    });
    expect(new AgentError('ABORTED', 'x').httpStatus).toBeNull();
  });

  it('isInstance is true for itself and from another copy, false for a sibling', () => {
    expect(AgentError.isInstance(new AgentError('ABORTED', 'x'))).toBe(true);
    expect(AgentError.isInstance(new BadArgumentError('x'))).toBe(false);
    expect(KarotteError.isInstance(new AgentError('ABORTED', 'x'))).toBe(true);
    const otherCopy = { [Symbol.for('karotte.error')]: true, [Symbol.for('karotte.error.AgentError')]: true };
    expect(AgentError.isInstance(otherCopy)).toBe(true);
  });
});
