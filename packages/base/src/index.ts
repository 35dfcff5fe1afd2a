export {
  KarotteError,
  defineKarotteError,
  BadArgumentError,
  SystemError,
  systemErrorReason,
  isErrno,
  toSystemError,
} from './errors.js';
export type {
  ErrorKind,
  ErrorCodeTable,
  KarotteErrorOptions,
  KarotteErrorDefinition,
  KarotteErrorInit,
  KarotteErrorClass,
  BaseErrorCode,
  SystemErrorReason,
  ErrnoLike,
} from './errors.js';
export {
  MISBEHAVIOR_CODES,
  misbehaviorRecordSchema,
  createMisbehavior,
  isMisbehaviorCode,
  escapeForDisplay,
} from './misbehavior.js';
export type { MisbehaviorCode, MisbehaviorRecord } from './misbehavior.js';
export { parseOptions } from './options.js';
export { KiB, MiB, GiB, formatBytes } from './units.js';
export { TRUSTED_BINARY_DIRS, TrustedBinaryError, resolveTrustedBinary } from './trusted-binary.js';
export type { TrustedBinaryErrorCode, ResolveTrustedBinaryOptions } from './trusted-binary.js';
