/**
 * The one error base of every Karotte package, and {@link defineKarotteError}, the one way a
 * package declares its error class.
 *
 * Errors carry a stable `name`, a closed SCREAMING_SNAKE `code`, that code's `kind` and the
 * original `cause`. Every Karotte error carries the `Symbol.for('karotte.error')` marker, and
 * every class made by `defineKarotteError` also carries its own
 * `Symbol.for('karotte.error.<Name>')`. `instanceof` fails across duplicate installed copies of
 * a package (two versions of `@karotte/limits` in one tree); the markers do not. So code
 * recognises another package's error with `LimitsError.isInstance(error)`, never with
 * `instanceof` (a lint rule forbids `instanceof` on a class imported from `@karotte/*`).
 *
 * **Kinds.** A code has one kind, written once in its class's code table; a throw never
 * chooses it, and the same code has the same kind in every package:
 * - `bad_argument`: the caller can fix it by calling differently. Invalid options or input,
 *   a name already taken, and misuse of a lifecycle: an object used after it was closed,
 *   removed or destroyed, or out of order (`REMOVED`, `DESTROYED`, `EPISODE_STATE`).
 * - `system`: the operation could not finish for a reason outside its arguments. The host
 *   lacks a privilege (not root), a binary, a kernel feature or a resource; an OS call
 *   failed; a deadline passed; a service failed. A cancellation is `system` too: `ABORTED`
 *   is the caller's decision, not a mistake in the call, and readers of `bad_argument` tell
 *   the user to fix their input (the CLI exits 2), which is wrong for Ctrl-C.
 * - `internal`: a bug in Karotte: an invariant broke, an exception nobody expected.
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
    return hasMarker(value, MARKER);
  }
}

function hasMarker(value: unknown, marker: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
}

/** A class's code table: every code it may carry (SCREAMING_SNAKE) and that code's kind. */
export type ErrorCodeTable = Readonly<Record<string, ErrorKind>>;

/** What {@link defineKarotteError} takes. */
export interface KarotteErrorDefinition<Codes extends ErrorCodeTable> {
  /** The class name: every instance's `name`, and its marker `karotte.error.<name>`. Never renamed. */
  readonly name: string;
  /** Every code of the class and its kind. The class's code union is derived from its keys. */
  readonly codes: Codes;
}

/** The options of the constructor of a class made by {@link defineKarotteError}. */
export interface KarotteErrorInit {
  /** The error this one wraps. Always kept as the standard `cause`. */
  readonly cause?: unknown;
}

/**
 * A class made by {@link defineKarotteError}: extend it to add fields or another constructor.
 * Its instances are plain `KarotteError<Code>` subclasses, named `name`.
 */
export interface KarotteErrorClass<Code extends string> {
  new (code: Code, message: string, options?: KarotteErrorInit): KarotteError<Code>;
  /** Every code of the class, in table order. */
  readonly codes: readonly Code[];
  /** The kind of each code: the one place a code's kind is decided. */
  readonly kinds: Readonly<Record<Code, ErrorKind>>;
  /**
   * True only for an error of this class (or a subclass of it), from any installed copy of
   * its package: it checks the class's own `Symbol.for('karotte.error.<Name>')` marker.
   * A subclass of a subclass shares its parent's marker, and so its parent's guard.
   */
  isInstance<T>(this: abstract new (...args: never[]) => T, value: unknown): value is T;
}

/**
 * Define a package's error class: its `name`, its closed codes and each code's kind, in one
 * table. The class gets its own cross-copy marker and a static `isInstance` true only for
 * itself; `KarotteError.isInstance` stays true for it.
 *
 * @example
 * const LIMITS_ERROR_CODES = {
 *   // Each code's meaning goes in a JSDoc comment on its key.
 *   CGROUPS_UNAVAILABLE: 'system',
 *   REMOVED: 'bad_argument',
 * } as const;
 * export type LimitsErrorCode = keyof typeof LIMITS_ERROR_CODES;
 * export class LimitsError extends defineKarotteError({ name: 'LimitsError', codes: LIMITS_ERROR_CODES }) {}
 *
 * new LimitsError('REMOVED', 'group g1 was removed').kind; // 'bad_argument'
 * LimitsError.isInstance(new LimitsError('REMOVED', '…')); // true, from any installed copy
 */
export function defineKarotteError<const Codes extends ErrorCodeTable>(
  definition: KarotteErrorDefinition<Codes>,
): KarotteErrorClass<keyof Codes & string> {
  type Code = keyof Codes & string;
  const name = definition.name;
  const marker = Symbol.for(`karotte.error.${name}`);
  const kinds = Object.freeze({ ...definition.codes }) as Readonly<Record<Code, ErrorKind>>;
  const codes = Object.freeze(Object.keys(kinds)) as readonly Code[];

  class DefinedError extends KarotteError<Code> {
    override readonly name: string = name;
    static readonly codes = codes;
    static readonly kinds = kinds;

    constructor(code: Code, message: string, options: KarotteErrorInit = {}) {
      // A code outside the table can only come from untyped JavaScript: it is a bug.
      super({
        code,
        message,
        kind: Object.hasOwn(kinds, code) ? kinds[code] : 'internal',
        cause: options.cause,
      });
    }

    static override isInstance(value: unknown): value is KarotteError {
      return hasMarker(value, MARKER) && hasMarker(value, marker);
    }
  }
  Object.defineProperty(DefinedError.prototype, marker, { value: true });
  Object.defineProperty(DefinedError, 'name', { value: `${name}Base` });
  return DefinedError as unknown as KarotteErrorClass<Code>;
}

/** Codes of the errors `@karotte/base` raises itself. */
export type BaseErrorCode = 'INVALID_ARGUMENT' | 'UNTRUSTED_BINARY' | 'BINARY_NOT_FOUND' | 'SYSTEM_ERROR';

/** A caller mistake: invalid options, a bad path, a wrong type. Names the offending field. */
export class BadArgumentError extends defineKarotteError({
  name: 'BadArgumentError',
  codes: { INVALID_ARGUMENT: 'bad_argument' },
}) {
  /** Dotted path of the offending field (`limits.memoryBytes`), when there is one. */
  readonly field: string | undefined;

  constructor(message: string, options: { field?: string; cause?: unknown } = {}) {
    super('INVALID_ARGUMENT', message, { cause: options.cause });
    this.field = options.field;
  }
}

/**
 * The closed set an OS error maps to, from its errno code:
 * - `NOT_FOUND`: ENOENT, ENOTDIR, ESRCH, ENXIO, ENODEV.
 * - `PERMISSION_DENIED`: EACCES, EPERM, EROFS.
 * - `ALREADY_EXISTS`: EEXIST, ENOTEMPTY.
 * - `BUSY`: EBUSY, EAGAIN, ETXTBSY, EINTR.
 * - `EXHAUSTED`: the host ran out of something: ENOSPC, EDQUOT, ENOMEM, EMFILE, ENFILE.
 * - `INVALID`: EINVAL, ELOOP, ENAMETOOLONG, EISDIR, EBADF, EXDEV, ENOSYS, EOPNOTSUPP.
 * - `TIMED_OUT`: ETIMEDOUT.
 * - `IO`: EIO.
 * - `UNKNOWN`: any other code, or no errno at all.
 */
export type SystemErrorReason =
  | 'NOT_FOUND'
  | 'PERMISSION_DENIED'
  | 'ALREADY_EXISTS'
  | 'BUSY'
  | 'EXHAUSTED'
  | 'INVALID'
  | 'TIMED_OUT'
  | 'IO'
  | 'UNKNOWN';

const ERRNO_REASONS: Readonly<Record<string, SystemErrorReason>> = Object.freeze({
  ENOENT: 'NOT_FOUND',
  ENOTDIR: 'NOT_FOUND',
  ESRCH: 'NOT_FOUND',
  ENXIO: 'NOT_FOUND',
  ENODEV: 'NOT_FOUND',
  EACCES: 'PERMISSION_DENIED',
  EPERM: 'PERMISSION_DENIED',
  EROFS: 'PERMISSION_DENIED',
  EEXIST: 'ALREADY_EXISTS',
  ENOTEMPTY: 'ALREADY_EXISTS',
  EBUSY: 'BUSY',
  EAGAIN: 'BUSY',
  ETXTBSY: 'BUSY',
  EINTR: 'BUSY',
  ENOSPC: 'EXHAUSTED',
  EDQUOT: 'EXHAUSTED',
  ENOMEM: 'EXHAUSTED',
  EMFILE: 'EXHAUSTED',
  ENFILE: 'EXHAUSTED',
  EINVAL: 'INVALID',
  ELOOP: 'INVALID',
  ENAMETOOLONG: 'INVALID',
  EISDIR: 'INVALID',
  EBADF: 'INVALID',
  EXDEV: 'INVALID',
  ENOSYS: 'INVALID',
  EOPNOTSUPP: 'INVALID',
  ETIMEDOUT: 'TIMED_OUT',
  EIO: 'IO',
});

/** The {@link SystemErrorReason} of an errno code (`UNKNOWN` for any other or none). */
export function systemErrorReason(errno: string | undefined): SystemErrorReason {
  return errno !== undefined && Object.hasOwn(ERRNO_REASONS, errno) ? ERRNO_REASONS[errno]! : 'UNKNOWN';
}

/**
 * A fault of the host: an OS call that failed for reasons outside the caller's control.
 * Carries the `syscall`, `path` and `errno` code of the underlying error, and `reason`, the
 * closed class of that errno.
 */
export class SystemError extends defineKarotteError({
  name: 'SystemError',
  codes: { SYSTEM_ERROR: 'system' },
}) {
  readonly syscall: string | undefined;
  readonly path: string | undefined;
  /** The raw errno code (`ENOSPC`), when there is one. */
  readonly errno: string | undefined;
  /** The closed class of `errno`. */
  readonly reason: SystemErrorReason;

  constructor(
    message: string,
    options: { syscall?: string; path?: string; errno?: string; cause?: unknown } = {},
  ) {
    super('SYSTEM_ERROR', message, { cause: options.cause });
    this.syscall = options.syscall;
    this.path = options.path;
    this.errno = options.errno;
    this.reason = systemErrorReason(options.errno);
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
