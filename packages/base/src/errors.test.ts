import { describe, expect, it } from 'vitest';
import { BadArgumentError, KarotteError, SystemError, isErrno, toSystemError } from './errors.js';

describe('KarotteError', () => {
  it('keeps code, kind, name and cause', () => {
    const cause = new Error('inner');
    const error = new KarotteError({ code: 'SOME_CODE', kind: 'system', message: 'outer', cause });
    expect(error.code).toBe('SOME_CODE');
    expect(error.kind).toBe('system');
    expect(error.cause).toBe(cause);
    expect(error.message).toBe('outer');
  });

  it('is recognised across copies through the Symbol.for marker', () => {
    const foreign = Object.assign(Object.create(null) as object, { [Symbol.for('karotte.error')]: true });
    expect(KarotteError.isInstance(foreign)).toBe(true);
    expect(KarotteError.isInstance(new Error('x'))).toBe(false);
    expect(KarotteError.isInstance(null)).toBe(false);
    expect(KarotteError.isInstance(new BadArgumentError('bad', { field: 'a.b' }))).toBe(true);
  });

  it('BadArgumentError names the field', () => {
    const error = new BadArgumentError('bad value', { field: 'limits.memoryBytes' });
    expect(error).toMatchObject({
      name: 'BadArgumentError',
      code: 'INVALID_ARGUMENT',
      kind: 'bad_argument',
      field: 'limits.memoryBytes',
    });
  });

  it('wraps errno errors into SystemError with syscall and path', () => {
    const errno = Object.assign(new Error('ENOENT: no such file'), {
      code: 'ENOENT',
      syscall: 'open',
      path: '/x',
    });
    const wrapped = toSystemError(errno, 'reading config');
    expect(wrapped).toBeInstanceOf(SystemError);
    expect(wrapped).toMatchObject({ errno: 'ENOENT', syscall: 'open', path: '/x', cause: errno });
    expect(wrapped.message).toBe('reading config: ENOENT open /x');
    expect(toSystemError('weird', 'ctx').message).toBe('ctx: weird');
  });

  it('isErrno matches codes', () => {
    const errno = Object.assign(new Error('x'), { code: 'EPERM' });
    expect(isErrno(errno)).toBe(true);
    expect(isErrno(errno, 'EPERM', 'EACCES')).toBe(true);
    expect(isErrno(errno, 'ENOENT')).toBe(false);
    expect(isErrno({ code: 5 })).toBe(false);
  });
});
