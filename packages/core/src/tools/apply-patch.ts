// V4A patches (`*** Begin Patch` … `*** End Patch`), the format OpenAI's models write for
// `apply_patch`: parsed here, bounded (patch size, files, hunks, matching work), and applied by
// a demoted patcher: every file is read and written by the sandbox's file tools as the
// student, never by the harness itself.
import path from 'node:path';
import { MiB } from '@karotte/base';
import type { StudentFiles } from '../world.js';
import { describeFailure, quote } from './common.js';

/** The bounds of one patch. */
export const PATCH_LIMITS = Object.freeze({
  /** Characters of patch text. */
  maxPatchCharacters: MiB,
  /** File operations (Add, Update, Delete) in one patch. */
  maxFiles: 100,
  /** `@@` hunks in all. */
  maxHunks: 1000,
  /** Bytes of a file read for an update, and of any file written. */
  maxFileBytes: 10 * MiB,
  /**
   * Line comparisons spent matching hunks to files in all: a patch whose context is built to
   * be slow to find (a long pattern over a file of equal lines) is refused, not searched.
   */
  maxComparisons: 20_000_000,
});

/** One line of an update hunk. */
interface HunkLine {
  readonly kind: ' ' | '-' | '+';
  readonly text: string;
}

/** One `@@` hunk: the lines it names to find its place (`@@ def f():`), then its lines. */
export interface Hunk {
  /** Header lines (`@@ <context>`), each found in order, the next one below the last. */
  readonly contexts: readonly string[];
  readonly lines: readonly HunkLine[];
  /** `*** End of File`: the hunk's lines end the file. */
  readonly endOfFile: boolean;
}

export type PatchOperation =
  | { readonly type: 'add'; readonly path: string; readonly content: string }
  | { readonly type: 'delete'; readonly path: string }
  | {
      readonly type: 'update';
      readonly path: string;
      readonly moveTo: string | null;
      readonly hunks: readonly Hunk[];
    };

export type ParseResult =
  | { readonly ok: true; readonly operations: readonly PatchOperation[] }
  | { readonly ok: false; readonly error: string };

const BEGIN = '*** Begin Patch';
const END = '*** End Patch';
const ADD = '*** Add File:';
const DELETE = '*** Delete File:';
const UPDATE = '*** Update File:';
const MOVE = '*** Move to:';
const END_OF_FILE = '*** End of File';
const UNIFIED_HEADER = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@/;

function isFileMarker(trimmed: string): boolean {
  return (
    trimmed.startsWith(ADD) || trimmed.startsWith(DELETE) || trimmed.startsWith(UPDATE) || trimmed === END
  );
}

function checkPath(raw: string, lineNumber: number): string | { error: string } {
  const value = raw.trim();
  if (value === '') return { error: `line ${lineNumber}: the path is empty` };
  if (value.includes('\0')) return { error: `line ${lineNumber}: the path contains a NUL byte` };
  if (value.length > 4096) return { error: `line ${lineNumber}: the path is longer than 4096 characters` };
  return value;
}

/**
 * Parse a V4A patch. Lenient where models are sloppy and nothing is lost: marker lines may be
 * indented or carry trailing spaces, CRLF line ends are read as LF, an empty line inside a
 * hunk is an empty context line, the first hunk of a file may leave out its `@@`, and a
 * `<<'EOF'` heredoc around the patch (as written for a shell) is taken off.
 */
export function parsePatch(text: string): ParseResult {
  if (text.length > PATCH_LIMITS.maxPatchCharacters) {
    return { ok: false, error: `the patch is longer than ${PATCH_LIMITS.maxPatchCharacters} characters` };
  }
  let lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  while (lines.length > 0 && lines[0]!.trim() === '') lines.shift();
  while (lines.length > 0 && lines.at(-1)!.trim() === '') lines.pop();
  const heredoc = /^(?:apply_patch\s+)?<<\s*(['"]?)([A-Za-z_]\w*)\1\s*$/.exec(lines[0]?.trim() ?? '');
  if (heredoc !== null && lines.at(-1)?.trim() === heredoc[2]) lines = lines.slice(1, -1);
  if (lines[0]?.trim() !== BEGIN)
    return { ok: false, error: `the patch must start with the line '${BEGIN}'` };
  if (lines.length < 2 || lines.at(-1)!.trim() !== END) {
    return { ok: false, error: `the patch must end with the line '${END}'` };
  }
  const operations: PatchOperation[] = [];
  let hunkCount = 0;
  // Line numbers in errors are 1-based within the patch as given (after the heredoc).
  let at = 1;
  const last = lines.length - 1;
  while (at < last) {
    const lineNumber = at + 1;
    const trimmed = lines[at]!.trim();
    if (operations.length >= PATCH_LIMITS.maxFiles) {
      return { ok: false, error: `the patch has more than ${PATCH_LIMITS.maxFiles} file operations` };
    }
    if (trimmed.startsWith(ADD)) {
      const filePath = checkPath(trimmed.slice(ADD.length), lineNumber);
      if (typeof filePath !== 'string') return { ok: false, ...filePath };
      at += 1;
      const content: string[] = [];
      while (at < last && !isFileMarker(lines[at]!.trim())) {
        const line = lines[at]!;
        if (!line.startsWith('+')) {
          return {
            ok: false,
            error: `line ${at + 1}: in '${ADD}' every line of the new file starts with '+' (got ${quote(line, 80)})`,
          };
        }
        content.push(line.slice(1));
        at += 1;
      }
      operations.push({ type: 'add', path: filePath, content: content.map((line) => `${line}\n`).join('') });
      continue;
    }
    if (trimmed.startsWith(DELETE)) {
      const filePath = checkPath(trimmed.slice(DELETE.length), lineNumber);
      if (typeof filePath !== 'string') return { ok: false, ...filePath };
      operations.push({ type: 'delete', path: filePath });
      at += 1;
      continue;
    }
    if (trimmed.startsWith(UPDATE)) {
      const filePath = checkPath(trimmed.slice(UPDATE.length), lineNumber);
      if (typeof filePath !== 'string') return { ok: false, ...filePath };
      at += 1;
      let moveTo: string | null = null;
      if (at < last && lines[at]!.trim().startsWith(MOVE)) {
        const target = checkPath(lines[at]!.trim().slice(MOVE.length), at + 1);
        if (typeof target !== 'string') return { ok: false, ...target };
        moveTo = target;
        at += 1;
      }
      const hunks: Hunk[] = [];
      let contexts: string[] = [];
      let hunkLines: HunkLine[] = [];
      let hunkStart = at + 1;
      const close = (endOfFile: boolean): string | undefined => {
        if (hunkLines.length === 0) {
          return `line ${hunkStart}: a hunk of '${UPDATE} ${filePath}' has no lines`;
        }
        hunks.push({ contexts, lines: hunkLines, endOfFile });
        contexts = [];
        hunkLines = [];
        return undefined;
      };
      while (at < last && !isFileMarker(lines[at]!.trim())) {
        const line = lines[at]!;
        const trimmedLine = line.trim();
        if (trimmedLine.startsWith('@@')) {
          // Consecutive `@@` lines narrow the place step by step (class, then method).
          if (hunkLines.length > 0) {
            const error = close(false);
            if (error !== undefined) return { ok: false, error };
          }
          if (contexts.length === 0) hunkStart = at + 1;
          const header = trimmedLine === '@@' ? '' : line.slice(line.indexOf('@@') + 2).replace(/^ /, '');
          // A unified diff's `@@ -12,3 +12,4 @@` carries line numbers, not a line to find.
          if (header.trim() !== '' && !UNIFIED_HEADER.test(trimmedLine)) contexts.push(header);
        } else if (trimmedLine === END_OF_FILE) {
          const error = close(true);
          if (error !== undefined) return { ok: false, error };
          hunkStart = at + 2;
        } else if (line === '') {
          hunkLines.push({ kind: ' ', text: '' });
        } else if (line[0] === ' ' || line[0] === '-' || line[0] === '+') {
          hunkLines.push({ kind: line[0], text: line.slice(1) });
        } else {
          return {
            ok: false,
            error: `line ${at + 1}: unexpected line in a hunk of ${quote(filePath, 200)}: ${quote(line, 80)} (hunk lines start with ' ', '-' or '+'; hunks with '@@')`,
          };
        }
        at += 1;
      }
      if (hunkLines.length > 0 || contexts.length > 0) {
        const error = close(false);
        if (error !== undefined) return { ok: false, error };
      }
      if (hunks.length === 0 && moveTo === null) {
        return { ok: false, error: `line ${lineNumber}: '${UPDATE} ${filePath}' has no hunks` };
      }
      hunkCount += hunks.length;
      if (hunkCount > PATCH_LIMITS.maxHunks) {
        return { ok: false, error: `the patch has more than ${PATCH_LIMITS.maxHunks} hunks` };
      }
      operations.push({ type: 'update', path: filePath, moveTo, hunks });
      continue;
    }
    return {
      ok: false,
      error: `line ${lineNumber}: expected '${ADD}', '${UPDATE}', '${DELETE}' or '${END}', got ${quote(lines[at]!, 80)}`,
    };
  }
  if (operations.length === 0) return { ok: false, error: 'the patch has no file operations' };
  return { ok: true, operations };
}

/** How loosely a hunk's lines had to be matched: exactly, or ignoring some differences. */
type MatchFuzz = 'exact' | 'trailing-whitespace' | 'whitespace' | 'punctuation';

const FUZZ_ORDER: readonly MatchFuzz[] = ['exact', 'trailing-whitespace', 'whitespace', 'punctuation'];

/** Typographic characters models write for ASCII ones (quotes, dashes, spaces). */
const PUNCTUATION: Readonly<Record<string, string>> = {
  '\u2018': "'",
  '\u2019': "'",
  '\u201a': "'",
  '\u201b': "'",
  '\u201c': '"',
  '\u201d': '"',
  '\u201e': '"',
  '\u201f': '"',
  '\u2010': '-',
  '\u2011': '-',
  '\u2012': '-',
  '\u2013': '-',
  '\u2014': '-',
  '\u2015': '-',
  '\u2212': '-',
  '\u00a0': ' ',
  '\u2002': ' ',
  '\u2003': ' ',
  '\u2009': ' ',
  '\u202f': ' ',
};

function normalize(line: string, fuzz: MatchFuzz): string {
  switch (fuzz) {
    case 'exact':
      return line;
    case 'trailing-whitespace':
      return line.trimEnd();
    case 'whitespace':
      return line.trim();
    case 'punctuation':
      return line
        .replace(
          /[\u2010-\u2015\u2018-\u201f\u2212\u00a0\u2002\u2003\u2009\u202f]/g,
          (c) => PUNCTUATION[c] ?? c,
        )
        .trim();
  }
}

/** A file's lines for matching, normalised once per fuzz level. */
class Matcher {
  private readonly views = new Map<MatchFuzz, readonly string[]>();
  constructor(
    readonly lines: readonly string[],
    private readonly budget: { remaining: number },
  ) {}

  private view(fuzz: MatchFuzz): readonly string[] {
    let lines = this.views.get(fuzz);
    if (lines === undefined) {
      lines = fuzz === 'exact' ? this.lines : this.lines.map((line) => normalize(line, fuzz));
      this.views.set(fuzz, lines);
    }
    return lines;
  }

  /**
   * The first index at or after `from` where `pattern` matches, trying each fuzz level in
   * turn (exact first). With `atEnd` (`*** End of File`) the only place tried is the one that
   * ends the file.
   */
  seek(
    pattern: readonly string[],
    from: number,
    atEnd: boolean,
  ): { index: number; fuzz: MatchFuzz } | 'budget' | undefined {
    if (pattern.length === 0) return { index: from, fuzz: 'exact' };
    const lastStart = this.lines.length - pattern.length;
    const first = atEnd ? lastStart : Math.max(0, from);
    if (lastStart < 0 || first < from) return undefined;
    for (const fuzz of FUZZ_ORDER) {
      const haystack = this.view(fuzz);
      const needle = fuzz === 'exact' ? pattern : pattern.map((line) => normalize(line, fuzz));
      for (let start = first; start <= lastStart; start += 1) {
        const found = this.matchAt(haystack, needle, start);
        if (found === 'budget') return 'budget';
        if (found) return { index: start, fuzz };
      }
    }
    return undefined;
  }

  private matchAt(haystack: readonly string[], needle: readonly string[], start: number): boolean | 'budget' {
    for (let i = 0; i < needle.length; i += 1) {
      this.budget.remaining -= 1;
      if (this.budget.remaining < 0) return 'budget';
      if (haystack[start + i] !== needle[i]) return false;
    }
    return true;
  }
}

export type UpdateResult =
  | { readonly ok: true; readonly content: string; readonly fuzz: MatchFuzz }
  | { readonly ok: false; readonly error: string };

/**
 * Apply an update's hunks to a file's text. Hunks are found in order, each below the last
 * (first match at or after the previous hunk, exact before fuzzy); a hunk of only added lines
 * goes right below its `@@` context, or at the end of the file without one. The result ends
 * with a newline; CRLF files stay CRLF.
 */
export function applyHunks(
  original: string,
  hunks: readonly Hunk[],
  label: string,
  budget: { remaining: number } = { remaining: PATCH_LIMITS.maxComparisons },
): UpdateResult {
  const eol = original.includes('\r\n') && !/(^|[^\r])\n/.test(original) ? '\r\n' : '\n';
  const lines = original.split(eol);
  if (lines.at(-1) === '') lines.pop();
  const matcher = new Matcher(lines, budget);
  const replacements: { start: number; removed: number; added: readonly string[] }[] = [];
  let cursor = 0;
  let worst: MatchFuzz = 'exact';
  const note = (fuzz: MatchFuzz): void => {
    if (FUZZ_ORDER.indexOf(fuzz) > FUZZ_ORDER.indexOf(worst)) worst = fuzz;
  };
  const tooExpensive = {
    ok: false,
    error:
      'matching the hunks took too long (the patch is too costly to place); give more distinctive context',
  } as const;
  for (const [index, hunk] of hunks.entries()) {
    for (const context of hunk.contexts) {
      const found = matcher.seek([context], cursor, false);
      if (found === 'budget') return tooExpensive;
      if (found === undefined) {
        return {
          ok: false,
          error: `hunk ${index + 1}: cannot find the context line '@@ ${quote(context, 120)}' in ${quote(label, 200)}${cursor > 0 ? ` below line ${cursor}` : ''}`,
        };
      }
      note(found.fuzz);
      cursor = found.index + 1;
    }
    let hunkLines = hunk.lines;
    let oldLines = hunkLines.filter((line) => line.kind !== '+').map((line) => line.text);
    if (oldLines.length === 0) {
      const at = hunk.contexts.length > 0 && !hunk.endOfFile ? cursor : lines.length;
      replacements.push({ start: at, removed: 0, added: hunkLines.map((line) => line.text) });
      cursor = at;
      continue;
    }
    let found = matcher.seek(oldLines, cursor, hunk.endOfFile);
    // A last empty context line often stands for the file's final newline.
    const lastLine = hunkLines.at(-1);
    if (found === undefined && lastLine?.kind === ' ' && lastLine.text === '' && oldLines.length > 1) {
      hunkLines = hunkLines.slice(0, -1);
      oldLines = oldLines.slice(0, -1);
      found = matcher.seek(oldLines, cursor, hunk.endOfFile);
    }
    if (found === 'budget') return tooExpensive;
    if (found === undefined) {
      const shown = oldLines
        .slice(0, 8)
        .map((line) => `  ${quote(line, 120)}`)
        .join('\n');
      return {
        ok: false,
        error: `hunk ${index + 1}: cannot find these lines in ${quote(label, 200)}${cursor > 0 ? ` below line ${cursor}` : ''}:\n${shown}${oldLines.length > 8 ? '\n  …' : ''}`,
      };
    }
    // Context lines keep the file's own text (a fuzzy match changes only what the hunk changes).
    const newLines: string[] = [];
    let oldAt = found.index;
    for (const line of hunkLines) {
      if (line.kind === '+') newLines.push(line.text);
      else if (line.kind === ' ') newLines.push(lines[oldAt++]!);
      else oldAt += 1;
    }
    note(found.fuzz);
    replacements.push({ start: found.index, removed: oldLines.length, added: newLines });
    cursor = found.index + oldLines.length;
  }
  const out: string[] = [];
  let position = 0;
  for (const replacement of replacements) {
    out.push(...lines.slice(position, replacement.start), ...replacement.added);
    position = replacement.start + replacement.removed;
  }
  out.push(...lines.slice(position));
  return { ok: true, content: out.length === 0 ? '' : out.join(eol) + eol, fuzz: worst };
}

/** What applying a patch did: every file it changed, in order, and how it ended. */
export interface PatchOutcome {
  readonly ok: boolean;
  /** One line per change: `A path`, `M path`, `M old -> new`, `D path`. */
  readonly changed: readonly string[];
  /** Why it stopped, when `ok` is false. */
  readonly error?: string;
  /** Hunks placed only by ignoring whitespace or typographic punctuation, by file. */
  readonly fuzzy: readonly string[];
}

interface PlannedWrite {
  readonly summary: string;
  apply(): Promise<string | undefined>;
}

/**
 * Apply a parsed patch through the student's file tools. Every file is read, and every change
 * computed, before anything is written: a hunk that does not fit, a missing file or a cap
 * changes nothing. Then the writes run in order, each one refused if its file changed since
 * it was read (compare-and-swap on the read's SHA-256); a write that fails stops the rest,
 * and the outcome lists what was already changed.
 */
export async function applyPatch(
  operations: readonly PatchOperation[],
  files: StudentFiles,
  limits: { timeoutMs: number; abortSignal: AbortSignal },
): Promise<PatchOutcome> {
  const seen = new Set<string>();
  for (const operation of operations) {
    for (const target of [operation.path, operation.type === 'update' ? operation.moveTo : null]) {
      if (target === null) continue;
      const key = path.posix.normalize(target);
      if (seen.has(key)) {
        return {
          ok: false,
          changed: [],
          fuzzy: [],
          error: `${quote(target, 200)} appears in more than one operation of the patch; nothing was changed`,
        };
      }
      seen.add(key);
    }
  }
  const budget = { remaining: PATCH_LIMITS.maxComparisons };
  const plan: PlannedWrite[] = [];
  const fuzzy: string[] = [];
  const stop = (error: string): PatchOutcome => ({
    ok: false,
    changed: [],
    fuzzy: [],
    error: `${error}; nothing was changed`,
  });
  for (const operation of operations) {
    if (operation.type === 'add') {
      if (Buffer.byteLength(operation.content, 'utf8') > PATCH_LIMITS.maxFileBytes) {
        return stop(
          `the new file ${quote(operation.path, 200)} would be larger than ${PATCH_LIMITS.maxFileBytes} bytes`,
        );
      }
      plan.push({
        summary: `A ${quote(operation.path, 200)}`,
        async apply() {
          const written = await files.write({
            path: operation.path,
            content: operation.content,
            createOnly: true,
            createParents: true,
            ...limits,
          });
          if (written.ok) return undefined;
          if (written.code === 'EEXIST')
            return `${quote(operation.path, 200)} already exists (use '${UPDATE}' to change it)`;
          return describeFailure(written, operation.path);
        },
      });
    } else if (operation.type === 'delete') {
      plan.push({
        summary: `D ${quote(operation.path, 200)}`,
        async apply() {
          const removed = await files.delete({ path: operation.path, ...limits });
          return removed.ok ? undefined : describeFailure(removed, operation.path);
        },
      });
    } else {
      const read = await files.readText({
        path: operation.path,
        maxBytes: PATCH_LIMITS.maxFileBytes,
        ...limits,
      });
      if (!read.ok) {
        return stop(`cannot update: ${describeFailure(read, operation.path)}`);
      }
      let content = read.content;
      if (operation.hunks.length > 0) {
        const updated = applyHunks(read.content, operation.hunks, operation.path, budget);
        if (!updated.ok) return stop(updated.error);
        if (updated.fuzz !== 'exact')
          fuzzy.push(`${quote(operation.path, 200)} (${updated.fuzz} differences ignored)`);
        content = updated.content;
      }
      if (Buffer.byteLength(content, 'utf8') > PATCH_LIMITS.maxFileBytes) {
        return stop(`${quote(operation.path, 200)} would be larger than ${PATCH_LIMITS.maxFileBytes} bytes`);
      }
      const { moveTo } = operation;
      plan.push({
        summary:
          moveTo === null
            ? `M ${quote(operation.path, 200)}`
            : `M ${quote(operation.path, 200)} -> ${quote(moveTo, 200)}`,
        async apply() {
          if (moveTo === null) {
            const written = await files.write({
              path: operation.path,
              content,
              expectedSha256: read.sha256,
              ...limits,
            });
            return written.ok ? undefined : describeFailure(written, operation.path);
          }
          // A move writes the new file (never over an existing one), then removes the old.
          const written = await files.write({
            path: moveTo,
            content,
            createOnly: true,
            createParents: true,
            ...limits,
          });
          if (!written.ok) {
            return written.code === 'EEXIST'
              ? `cannot move to ${quote(moveTo, 200)}: it already exists`
              : describeFailure(written, moveTo);
          }
          const removed = await files.delete({ path: operation.path, ...limits });
          return removed.ok
            ? undefined
            : `${quote(moveTo, 200)} was written but ${describeFailure(removed, operation.path)}`;
        },
      });
    }
  }
  const changed: string[] = [];
  for (const step of plan) {
    const error = await step.apply();
    if (error !== undefined) {
      return {
        ok: false,
        changed,
        fuzzy,
        error: `${error}; ${changed.length === 0 ? 'nothing was changed' : 'the changes listed before it were made, the rest were not'}`,
      };
    }
    changed.push(step.summary);
  }
  return { ok: true, changed, fuzzy };
}
