export {
  KarotteError,
  defineKarotteError,
  BadArgumentError,
  SystemError,
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
  escapeForDisplay,
} from './misbehavior.js';
export type { MisbehaviorCode, MisbehaviorRecord } from './misbehavior.js';
export { parseOptions } from './options.js';
export { createWarmReserve } from './reserve.js';
export type { WarmReserve, WarmReserveOptions, WarmReserveStats } from './reserve.js';
export { KiB, MiB, GiB, formatBytes } from './units.js';
export { TrustedBinaryError, resolveTrustedBinary } from './trusted-binary.js';
export type { TrustedBinaryErrorCode, ResolveTrustedBinaryOptions } from './trusted-binary.js';
export { readBounded } from './host/bounded-read.js';
export type { BoundedReadResult, BoundedReadRefusal } from './host/bounded-read.js';
export { parseJsonStrict, jsonDepth } from './host/json.js';
export type { JsonValue, JsonParseLimits, JsonParseResult } from './host/json.js';
export { readJsonFile } from './host/json-file.js';
export type { JsonFileResult, JsonFileRefusal, ReadJsonFileOptions } from './host/json-file.js';
export { parseMountInfo } from './host/mountinfo.js';
export type { MountInfo, MountInfoEntry } from './host/mountinfo.js';
export { readAccountIds, readSubordinateIds, hasSubordinateConflict } from './host/ids.js';
export type { SubordinateRange } from './host/ids.js';
export {
  parseProcessStat,
  readProcessStat,
  readProcessStatus,
  isDeadState,
  isKillPending,
  isProcessLive,
  isProcessRunnable,
  bootId,
  identityOf,
  isSameProcessAlive,
  killPid,
  processesOfUid,
} from './host/proc.js';
export type { ProcessStat, ProcessStatus, ProcessIdentity, UidProcess, UidWalk } from './host/proc.js';
export { runProgram, killAsUid, createSpawner } from './host/spawner.js';
export type {
  RunProgramOptions,
  ProgramResult,
  Spawner,
  KillAsUidTarget,
  KillAsUidOptions,
} from './host/spawner.js';
