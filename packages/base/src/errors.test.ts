import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  BadArgumentError,
  KarotteError,
  SystemError,
  defineKarotteError,
  isErrno,
  systemErrorReason,
  toSystemError,
} from './errors.js';
import { TrustedBinaryError } from './trusted-binary.js';

/** An object as another installed copy of `@karotte/base` would make it: only the markers match. */
function fromOtherCopy(name: string, fields: Record<string, unknown> = {}): object {
  return Object.assign(Object.create(null) as object, fields, {
    [Symbol.for('karotte.error')]: true,
    [Symbol.for(`karotte.error.${name}`)]: true,
  });
}

const WIDGET_CODES = {
  /** A caller mistake. */
  WIDGET_BAD: 'bad_argument',
  /** The host failed. */
  WIDGET_GONE: 'system',
  /** A bug. */
  WIDGET_BUG: 'internal',
} as const;

class WidgetError extends defineKarotteError({ name: 'WidgetError', codes: WIDGET_CODES }) {
  readonly widget: string;

  constructor(code: keyof typeof WIDGET_CODES, widget: string, options: { cause?: unknown } = {}) {
    super(code, `widget ${widget}: ${code}`, options);
    this.widget = widget;
  }
}

class GadgetError extends defineKarotteError({ name: 'GadgetError', codes: { WIDGET_GONE: 'system' } }) {}

describe('defineKarotteError', () => {
  it('takes each kind from the table, and keeps name, code and cause', () => {
    const cause = new Error('inner');
    const error = new WidgetError('WIDGET_GONE', 'w1', { cause });
    expect(error).toMatchObject({ name: 'WidgetError', code: 'WIDGET_GONE', kind: 'system', widget: 'w1' });
    expect(error.cause).toBe(cause);
    expect(error.message).toBe('widget w1: WIDGET_GONE');
    expect(new WidgetError('WIDGET_BAD', 'w').kind).toBe('bad_argument');
    expect(new WidgetError('WIDGET_BUG', 'w').kind).toBe('internal');
    expect('cause' in new WidgetError('WIDGET_BAD', 'w')).toBe(false);
    expect(String(error)).toBe('WidgetError: widget w1: WIDGET_GONE');
    expect(error).toBeInstanceOf(KarotteError);
    expect(error).toBeInstanceOf(Error);
  });

  it('exposes the closed codes and the kinds table', () => {
    expect(WidgetError.codes).toEqual(['WIDGET_BAD', 'WIDGET_GONE', 'WIDGET_BUG']);
    expect(WidgetError.kinds).toEqual(WIDGET_CODES);
    expect(Object.isFrozen(WidgetError.kinds)).toBe(true);
    expect(Object.isFrozen(WidgetError.codes)).toBe(true);
    expectTypeOf(new WidgetError('WIDGET_BAD', 'w').code).toEqualTypeOf<
      'WIDGET_BAD' | 'WIDGET_GONE' | 'WIDGET_BUG'
    >();
  });

  it('a code outside the table (untyped JavaScript) is an internal error, not a crash', () => {
    const error = new (WidgetError as unknown as new (code: string, widget: string) => WidgetError)(
      'NOPE',
      'w',
    );
    expect(error.kind).toBe('internal');
    expect(
      new (GadgetError as unknown as new (code: string, message: string) => GadgetError)('toString', 'x')
        .kind,
    ).toBe('internal');
  });

  it('isInstance is true for the class itself and false for a sibling class', () => {
    const widget = new WidgetError('WIDGET_GONE', 'w');
    const gadget = new GadgetError('WIDGET_GONE', 'same code, other class');
    expect(WidgetError.isInstance(widget)).toBe(true);
    expect(WidgetError.isInstance(gadget)).toBe(false);
    expect(GadgetError.isInstance(gadget)).toBe(true);
    expect(GadgetError.isInstance(widget)).toBe(false);
    expect(KarotteError.isInstance(widget)).toBe(true);
    expect(KarotteError.isInstance(gadget)).toBe(true);
    for (const value of [
      new Error('x'),
      null,
      undefined,
      'WidgetError',
      { name: 'WidgetError', code: 'WIDGET_GONE' },
    ]) {
      expect(WidgetError.isInstance(value)).toBe(false);
    }
  });

  it('isInstance narrows to the subclass, fields included', () => {
    const value: unknown = new WidgetError('WIDGET_BAD', 'w2');
    if (!WidgetError.isInstance(value)) throw new TypeError('expected a WidgetError');
    expectTypeOf(value).toEqualTypeOf<WidgetError>();
    expect(value.widget).toBe('w2');
  });

  it('recognises an instance from another installed copy, where instanceof fails', () => {
    const foreign = fromOtherCopy('WidgetError', { code: 'WIDGET_GONE' });
    expect(foreign instanceof WidgetError).toBe(false);
    expect(WidgetError.isInstance(foreign)).toBe(true);
    expect(KarotteError.isInstance(foreign)).toBe(true);
    expect(GadgetError.isInstance(foreign)).toBe(false);
    // A second definition of the same class is what a second copy of the package evaluates.
    const SecondCopy = defineKarotteError({ name: 'WidgetError', codes: WIDGET_CODES });
    const fromSecond = new SecondCopy('WIDGET_BUG', 'from the other copy');
    expect(fromSecond instanceof WidgetError).toBe(false);
    expect(WidgetError.isInstance(fromSecond)).toBe(true);
    expect(SecondCopy.isInstance(new WidgetError('WIDGET_BUG', 'w'))).toBe(true);
  });

  it('the class marker alone, without the base marker, is not a Karotte error', () => {
    const half = { [Symbol.for('karotte.error.WidgetError')]: true };
    expect(WidgetError.isInstance(half)).toBe(false);
  });
});

describe('the base classes', () => {
  interface Guarded {
    readonly name: string;
    readonly kinds: Readonly<Record<string, string>>;
    isInstance(value: unknown): boolean;
  }
  const classes: readonly { Class: Guarded; make: () => KarotteError; sibling: KarotteError }[] = [
    { Class: BadArgumentError, make: () => new BadArgumentError('bad'), sibling: new SystemError('sys') },
    { Class: SystemError, make: () => new SystemError('sys'), sibling: new BadArgumentError('bad') },
    {
      Class: TrustedBinaryError,
      make: () => new TrustedBinaryError('BINARY_NOT_FOUND', 'setpriv', 'no setpriv'),
      sibling: new SystemError('sys'),
    },
  ];

  for (const { Class, make, sibling } of classes) {
    it(`${Class.name}: isInstance is true for itself, false for a sibling, true from another copy`, () => {
      const error = make();
      expect(Class.isInstance(error)).toBe(true);
      expect(Class.isInstance(sibling)).toBe(false);
      expect(Class.isInstance(fromOtherCopy(error.name))).toBe(true);
      expect(KarotteError.isInstance(error)).toBe(true);
      expect(error.kind).toBe(Class.kinds[error.code]);
    });
  }

  it('each base code has its kind', () => {
    expect(BadArgumentError.kinds).toEqual({ INVALID_ARGUMENT: 'bad_argument' });
    expect(SystemError.kinds).toEqual({ SYSTEM_ERROR: 'system' });
    expect(TrustedBinaryError.kinds).toEqual({ BINARY_NOT_FOUND: 'system', UNTRUSTED_BINARY: 'system' });
  });
});

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
    expect(wrapped).toMatchObject({
      errno: 'ENOENT',
      reason: 'NOT_FOUND',
      syscall: 'open',
      path: '/x',
      cause: errno,
    });
    expect(wrapped.message).toBe('reading config: ENOENT open /x');
    expect(toSystemError('weird', 'ctx').message).toBe('ctx: weird');
  });

  it('maps errno codes to the closed reasons', () => {
    expect(systemErrorReason('EACCES')).toBe('PERMISSION_DENIED');
    expect(systemErrorReason('ENOSPC')).toBe('EXHAUSTED');
    expect(systemErrorReason('EWHATEVER')).toBe('UNKNOWN');
    expect(systemErrorReason('toString')).toBe('UNKNOWN');
    expect(systemErrorReason(undefined)).toBe('UNKNOWN');
    expect(new SystemError('x').reason).toBe('UNKNOWN');
    expect(toSystemError(Object.assign(new Error('busy'), { code: 'EBUSY' }), 'umount').reason).toBe('BUSY');
  });

  it('isErrno matches codes', () => {
    const errno = Object.assign(new Error('x'), { code: 'EPERM' });
    expect(isErrno(errno)).toBe(true);
    expect(isErrno(errno, 'EPERM', 'EACCES')).toBe(true);
    expect(isErrno(errno, 'ENOENT')).toBe(false);
    expect(isErrno({ code: 5 })).toBe(false);
  });
});
