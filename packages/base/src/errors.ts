/**
 * The one error base of every Karotte package.
 *
 * Errors carry a stable `name`, a closed SCREAMING_SNAKE `code` and the original `cause`.
 * `isInstance()` recognises Karotte errors across duplicate installed copies of a package
 * (two versions of `@karotte/base` in one tree) through a `Symbol.for` marker, because
 * `instanceof` fails across copies.
 */
const MARKER = Symbol.for('karotte.error');

/** How an error should be read: a caller mistake, a fault of the host, or an internal bug. */
export type ErrorKind = 'bad_argument' | 'system' | 'internal';

export interface KarotteErrorOptions<Code extends string> {
  readonly code: Code;
  readonly message: string;
  readonly kind: ErrorKind;
  readonly cause?: unknown;
}

export class KarotteError<Code extends string = string> extends Error {
  private readonly [MARKER] = true;
  override readonly name: string = 'KarotteError';
  /** Stable, machine-readable code. Never reworded once published. */
  readonly code: Code;
  /** Caller mistake (`bad_argument`), host or environment fault (`system`), or a bug (`internal`). */
  readonly kind: ErrorKind;

  constructor(options: KarotteErrorOptions<Code>) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
    this.kind = options.kind;
  }

  /** True for any Karotte error, whichever installed copy of the package created it. */
  static isInstance(value: unknown): value is KarotteError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }
}

/** Codes of the errors `@karotte/base` raises itself. */
export type BaseErrorCode = 'INVALID_ARGUMENT' | 'UNTRUSTED_BINARY' | 'BINARY_NOT_FOUND' | 'SYSTEM_ERROR';

/** A caller mistake: invalid options, a bad path, a wrong type. Names the offending field. */
export class BadArgumentError extends KarotteError<'INVALID_ARGUMENT'> {
  override readonly name = 'BadArgumentError';
  /** Dotted path of the offending field (`limits.memoryBytes`), when there is one. */
  readonly field: string | undefined;

  constructor(message: string, options: { field?: string; cause?: unknown } = {}) {
    super({ code: 'INVALID_ARGUMENT', kind: 'bad_argument', message, cause: options.cause });
    this.field = options.field;
  }
}

/**
 * A fault of the host: an OS call that failed for reasons outside the caller's control.
 * Carries the `syscall`, `path` and `errno` code of the underlying error.
 */
export class SystemError extends KarotteError<'SYSTEM_ERROR'> {
  override readonly name = 'SystemError';
  readonly syscall: string | undefined;
  readonly path: string | undefined;
  readonly errno: string | undefined;

  constructor(
    message: string,
    options: { syscall?: string; path?: string; errno?: string; cause?: unknown } = {},
  ) {
    super({ code: 'SYSTEM_ERROR', kind: 'system', message, cause: options.cause });
    this.syscall = options.syscall;
    this.path = options.path;
    this.errno = options.errno;
  }
}

/** The shape of a Node.js errno error (`fs`, `child_process`, `net`). */
export interface ErrnoLike {
  code?: string;
  syscall?: string;
  path?: string;
  message: string;
}

/** True when `value` looks like a Node.js errno error, optionally with one of `codes`. */
export function isErrno(value: unknown, ...codes: string[]): value is ErrnoLike & { code: string } {
  if (typeof value !== 'object' || value === null) return false;
  const code = (value as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return codes.length === 0 || codes.includes(code);
}

/** Wrap a foreign error at a package seam, keeping it as `cause`. */
export function toSystemError(error: unknown, context: string): SystemError {
  if (isErrno(error)) {
    const detail = [error.code, error.syscall, error.path].filter(Boolean).join(' ');
    return new SystemError(`${context}: ${detail}`, {
      errno: error.code,
      ...(error.syscall === undefined ? {} : { syscall: error.syscall }),
      ...(error.path === undefined ? {} : { path: error.path }),
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SystemError(`${context}: ${message}`, { cause: error });
}
