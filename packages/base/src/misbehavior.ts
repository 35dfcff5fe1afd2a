import { z } from 'zod';

/**
 * Stable codes for what a student did that Karotte refused. Every code scores 0; none
 * turns a run into `error`. Codes are never renamed once published: add, never reword.
 */
export const MISBEHAVIOR_CODES = [
  /** A submission path, or a component leading to it, is a symbolic link. */
  'SYMLINK',
  /** A FIFO, socket, device or other non-regular file where a file was expected. */
  'NOT_REGULAR_FILE',
  /** A directory was expected and something else was found. */
  'NOT_DIRECTORY',
  /** A hard link to a file the student could not have written. */
  'HARD_LINK',
  /** A file larger than the per-file budget. */
  'FILE_TOO_LARGE',
  /** A submission whose files together exceed the total byte budget. */
  'TOTAL_TOO_LARGE',
  /** A submission with more entries than the budget. */
  'TOO_MANY_ENTRIES',
  /** A submission nested deeper than the budget. */
  'TOO_DEEP',
  /** A name or path over the length budget. */
  'NAME_TOO_LONG',
  /** An opened file resolved outside the root it was read from. */
  'ESCAPED_ROOT',
  /** The submission changed while it was being copied. */
  'CHANGED_DURING_COPY',
  /** An error the student can provoke at the destination (ENOSPC, ENAMETOOLONG, ...). */
  'CANNOT_SAVE',
  /** The submission could not be read (permissions the student set, an unstattable entry). */
  'UNREADABLE',
  /** A file whose type (by magic number or text check) is not what the task allows. */
  'WRONG_FILE_TYPE',
  /** Student processes stayed alive past the reaping deadline. */
  'UNREAPABLE',
  /** Files or IPC objects of the student could not be reclaimed. */
  'UNRECLAIMABLE',
  /** The student hit the memory limit. */
  'MEMORY_LIMIT',
  /** The student hit the process limit. */
  'PIDS_LIMIT',
  /** The student hit the disk byte or inode quota. */
  'DISK_LIMIT',
  /** The student ran past the episode's wall-clock limit. */
  'WALL_TIME_LIMIT',
  /**
   * The model stalled: more turns in a row than the episode allows came back with no text and
   * no tool call (a `length` cut, or reasoning only), despite a nudge after each.
   */
  'EMPTY_TURN_LIMIT',
  /** The grader failed (exit code, signal, timeout, invalid score) on the student's submission. */
  'GRADER_FAILED',
  /** The student tampered with something the grader relies on. */
  'TAMPERING',
] as const;

export type MisbehaviorCode = (typeof MISBEHAVIOR_CODES)[number];

/** One thing the student did that the framework refused, ready for a verdict. */
export interface MisbehaviorRecord {
  readonly code: MisbehaviorCode;
  /** A human-readable sentence. Student-controlled parts are escaped for safe printing. */
  readonly message: string;
  /** The student path involved, escaped for safe printing, when there is one. */
  readonly path?: string;
}

export const misbehaviorRecordSchema = z
  .object({
    code: z.enum(MISBEHAVIOR_CODES),
    message: z.string(),
    path: z.string().optional(),
  })
  .strict();

/** Build a misbehavior record; `path` is escaped with {@link escapeForDisplay}. */
export function createMisbehavior(
  code: MisbehaviorCode,
  message: string,
  path?: string | Uint8Array,
): MisbehaviorRecord {
  return path === undefined ? { code, message } : { code, message, path: escapeForDisplay(path) };
}

/** True when `value` is a known misbehavior code. */
export function isMisbehaviorCode(value: unknown): value is MisbehaviorCode {
  return typeof value === 'string' && (MISBEHAVIOR_CODES as readonly string[]).includes(value);
}

const DECODER = new TextDecoder('utf-8', { fatal: false });

/**
 * Escape a student-controlled name for safe printing and JSON: control characters,
 * backslashes, quotes-free; invalid UTF-8 bytes become `\xNN`, newlines `\n`, other control
 * and bidi/format characters `\u{...}`. The result is printable on one line and round-trips
 * through JSON. Buffers are decoded byte by byte so invalid sequences stay visible.
 */
export function escapeForDisplay(value: string | Uint8Array, maxLength = 1024): string {
  let out = '';
  if (typeof value === 'string') {
    for (const char of value) out += escapeChar(char);
  } else {
    out = escapeBytes(value);
  }
  if (out.length > maxLength) {
    const keep = Math.max(0, maxLength - 20);
    out = `${out.slice(0, keep)}…[${out.length - keep} more]`;
  }
  return out;
}

function escapeBytes(bytes: Uint8Array): string {
  let out = '';
  let start = 0;
  // Walk the bytes, decoding maximal valid UTF-8 runs and hex-escaping invalid bytes.
  let i = 0;
  while (i < bytes.length) {
    const length = utf8SequenceLength(bytes, i);
    if (length === 0) {
      if (start < i) for (const char of DECODER.decode(bytes.subarray(start, i))) out += escapeChar(char);
      out += `\\x${bytes[i]!.toString(16).padStart(2, '0')}`;
      i += 1;
      start = i;
    } else {
      i += length;
    }
  }
  if (start < bytes.length) for (const char of DECODER.decode(bytes.subarray(start))) out += escapeChar(char);
  return out;
}

/** Length of the valid UTF-8 sequence starting at `i`, or 0 when the byte there is invalid. */
function utf8SequenceLength(bytes: Uint8Array, i: number): number {
  const b0 = bytes[i]!;
  if (b0 < 0x80) return 1;
  const cont = (k: number): boolean => {
    const b = bytes[i + k];
    return b !== undefined && (b & 0xc0) === 0x80;
  };
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    const b1 = bytes[i + 1]!;
    if (b0 === 0xe0 && b1 < 0xa0) return 0; // overlong
    if (b0 === 0xed && b1 >= 0xa0) return 0; // surrogate
    return 3;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    const b1 = bytes[i + 1]!;
    if (b0 === 0xf0 && b1 < 0x90) return 0;
    if (b0 === 0xf4 && b1 >= 0x90) return 0;
    return 4;
  }
  return 0;
}

function escapeChar(char: string): string {
  switch (char) {
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
    case '\\':
      return '\\\\';
    default:
      break;
  }
  const cp = char.codePointAt(0)!;
  // C0/C1 controls, DEL, lone surrogates, bidi overrides and other invisible format characters.
  if (
    cp < 0x20 ||
    (cp >= 0x7f && cp <= 0x9f) ||
    (cp >= 0xd800 && cp <= 0xdfff) ||
    (cp >= 0x200b && cp <= 0x200f) ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    cp === 0xfeff
  ) {
    return `\\u{${cp.toString(16)}}`;
  }
  return char;
}
