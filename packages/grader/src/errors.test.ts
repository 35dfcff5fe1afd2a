import { BadArgumentError, KarotteError, SystemError, TrustedBinaryError } from '@karotte/base';
import type { ErrorKind } from '@karotte/base';
import { FileGuardError } from '@karotte/file-guard';
import { LimitsError } from '@karotte/limits';
import { ProcReaperError } from '@karotte/proc-reaper';
import { SandboxError } from '@karotte/sandbox';
import { describe, expect, it } from 'vitest';
import { GraderError, isVerdictErrorCode } from './errors.js';

/** Every Karotte error class the grader can meet, with a way to build one of each code. */
const CLASSES: readonly {
  readonly name: string;
  readonly Class: {
    readonly kinds: Readonly<Record<string, ErrorKind>>;
    isInstance(value: unknown): boolean;
  };
  readonly make: (code: string) => KarotteError;
}[] = [
  { name: 'BadArgumentError', Class: BadArgumentError, make: () => new BadArgumentError('bad') },
  { name: 'SystemError', Class: SystemError, make: () => new SystemError('sys') },
  {
    name: 'TrustedBinaryError',
    Class: TrustedBinaryError,
    make: (code) => new TrustedBinaryError(code as 'BINARY_NOT_FOUND', 'setpriv', 'x'),
  },
  { name: 'LimitsError', Class: LimitsError, make: (code) => new LimitsError(code as 'REMOVED', 'x') },
  {
    name: 'ProcReaperError',
    Class: ProcReaperError,
    make: (code) => new ProcReaperError(code as 'ABORTED', 'x'),
  },
  {
    name: 'FileGuardError',
    Class: FileGuardError,
    make: (code) => new FileGuardError(code as 'ABORTED', 'x'),
  },
  { name: 'SandboxError', Class: SandboxError, make: (code) => new SandboxError(code as 'DESTROYED', 'x') },
  { name: 'GraderError', Class: GraderError, make: (code) => new GraderError(code as 'INTERNAL', 'x') },
];

const KINDS: readonly ErrorKind[] = ['bad_argument', 'system', 'internal'];

describe('the error classes of the primitives and the grader', () => {
  for (const { name, Class, make } of CLASSES) {
    it(`${name}: every code has a kind, and an error of it has that kind and the class's name`, () => {
      const codes = Object.keys(Class.kinds);
      expect(codes.length).toBeGreaterThan(0);
      for (const code of codes) {
        expect(code).toMatch(/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/);
        expect(KINDS).toContain(Class.kinds[code]);
        const error = make(code);
        if (Object.keys(Class.kinds).length > 1) expect(error.code).toBe(code);
        expect(error.kind).toBe(Class.kinds[error.code]);
        expect(error.name).toBe(name);
      }
    });

    it(`${name}: isInstance is true for itself, false for every sibling, true from another copy`, () => {
      const code = Object.keys(Class.kinds)[0]!;
      expect(Class.isInstance(make(code))).toBe(true);
      for (const sibling of CLASSES.filter((other) => other.Class !== Class)) {
        expect(Class.isInstance(sibling.make(Object.keys(sibling.Class.kinds)[0]!))).toBe(false);
      }
      const otherCopy = Object.assign(Object.create(null) as object, {
        [Symbol.for('karotte.error')]: true,
        [Symbol.for(`karotte.error.${name}`)]: true,
      });
      expect(Class.isInstance(otherCopy)).toBe(true);
      expect(KarotteError.isInstance(make(code))).toBe(true);
    });
  }

  it('one code has one kind in every package', () => {
    const seen = new Map<string, { kind: ErrorKind; name: string }>();
    for (const { name, Class } of CLASSES) {
      for (const [code, kind] of Object.entries(Class.kinds)) {
        const first = seen.get(code);
        if (first === undefined) seen.set(code, { kind, name });
        else expect(kind, `${code} in ${name} and in ${first.name}`).toBe(first.kind);
      }
    }
    // The two rules that used to differ between packages.
    expect(seen.get('ABORTED')?.kind).toBe('system');
    for (const misuse of ['REMOVED', 'DESTROYED']) expect(seen.get(misuse)?.kind).toBe('bad_argument');
  });

  it('GraderError.codes lists the table, and verdict codes cover every class', () => {
    expect(GraderError.codes).toEqual(Object.keys(GraderError.kinds));
    for (const { Class } of CLASSES) {
      for (const code of Object.keys(Class.kinds)) expect(isVerdictErrorCode(code)).toBe(true);
    }
    expect(isVerdictErrorCode('NOT_A_CODE')).toBe(false);
    expect(isVerdictErrorCode('toString')).toBe(false);
  });
});
