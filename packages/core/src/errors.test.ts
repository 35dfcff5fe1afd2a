import { BadArgumentError, KarotteError, SystemError, TrustedBinaryError } from '@karotte/base';
import type { ErrorKind } from '@karotte/base';
import { FileGuardError } from '@karotte/file-guard';
import { GraderError } from '@karotte/grader';
import { LimitsError } from '@karotte/limits';
import { SandboxError } from '@karotte/sandbox';
import { describe, expect, it } from 'vitest';
import { CoreError, isEpisodeErrorCode } from './errors.js';

// ProcReaperError is not a dependency of core: the grader's errors test covers it.
const OTHERS: readonly { readonly kinds: Readonly<Record<string, ErrorKind>> }[] = [
  BadArgumentError,
  SystemError,
  TrustedBinaryError,
  LimitsError,
  FileGuardError,
  SandboxError,
  GraderError,
];

describe('CoreError', () => {
  it('takes each kind from its table and keeps field and cause', () => {
    const cause = new Error('inner');
    const error = new CoreError('INVALID_TASK', 'bad task', { field: 'id', cause });
    expect(error).toMatchObject({
      name: 'CoreError',
      code: 'INVALID_TASK',
      kind: 'bad_argument',
      field: 'id',
    });
    expect(error.cause).toBe(cause);
    for (const code of CoreError.codes) expect(new CoreError(code, 'x').kind).toBe(CoreError.kinds[code]);
    expect(CoreError.kinds).toMatchObject({
      EPISODE_STATE: 'bad_argument',
      CONFINEMENT_UNAVAILABLE: 'system',
      TEARDOWN_INCOMPLETE: 'system',
      AGENT_FAILED: 'system',
    });
  });

  it('isInstance is true for itself, false for a sibling, true from another copy', () => {
    expect(CoreError.isInstance(new CoreError('AGENT_FAILED', 'x'))).toBe(true);
    expect(CoreError.isInstance(new GraderError('INTERNAL', 'x'))).toBe(false);
    expect(CoreError.isInstance(new BadArgumentError('x'))).toBe(false);
    expect(GraderError.isInstance(new CoreError('CONFINEMENT_UNAVAILABLE', 'x'))).toBe(false);
    expect(KarotteError.isInstance(new CoreError('AGENT_FAILED', 'x'))).toBe(true);
    const otherCopy = { [Symbol.for('karotte.error')]: true, [Symbol.for('karotte.error.CoreError')]: true };
    expect(CoreError.isInstance(otherCopy)).toBe(true);
  });

  it('a code shared with another package has the same kind there', () => {
    for (const Other of OTHERS) {
      for (const [code, kind] of Object.entries(Other.kinds)) {
        if (Object.hasOwn(CoreError.kinds, code)) {
          expect(CoreError.kinds[code as keyof typeof CoreError.kinds], code).toBe(kind);
        }
      }
    }
  });

  it('episode error codes are every Karotte code core meets, plus NOT_GRADED', () => {
    for (const Class of [CoreError, ...OTHERS]) {
      for (const code of Object.keys(Class.kinds)) expect(isEpisodeErrorCode(code)).toBe(true);
    }
    expect(isEpisodeErrorCode('NOT_GRADED')).toBe(true);
    expect(isEpisodeErrorCode('NOT_PRIVILEGED')).toBe(true);
    expect(isEpisodeErrorCode('MY_OWN_CODE')).toBe(false);
  });
});
