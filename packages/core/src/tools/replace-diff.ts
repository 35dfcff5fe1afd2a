// The unified diff `replace_in_file` answers with, built from the match positions (not by a
// general diff of the two files: a 10 MiB file with a million matches stays linear), exact
// enough that `patch` applies it, `\ No newline at end of file` markers included.
import { headWithinJsonBytes } from './common.js';

/** Lines of context around each changed block. */
const CONTEXT_LINES = 3;
/** Replacements shown at most; the rest are counted. */
export const MAX_DIFF_OCCURRENCES = 50;
/** JSON-encoded bytes of the diff at most. */
export const MAX_DIFF_BYTES = 64 * 1024;
const TRUNCATION_NOTE = '\n(diff truncated)\n';

/** Whole lines `[start, end)` of the old text and what they become. */
interface Block {
  readonly start: number;
  readonly end: number;
  readonly replaced: number;
  readonly newText: string;
}

function lineStart(text: string, position: number): number {
  return position === 0 ? 0 : text.lastIndexOf('\n', position - 1) + 1;
}

function lineEnd(text: string, position: number): number {
  const newline = text.indexOf('\n', position);
  return newline === -1 ? text.length : newline + 1;
}

function countNewlines(text: string, from: number, to: number): number {
  let count = 0;
  for (let at = text.indexOf('\n', from); at !== -1 && at < to; at = text.indexOf('\n', at + 1)) count += 1;
  return count;
}

/**
 * The changed blocks of the first `count` replacements of `oldText` by `newText`, as many as
 * fit in {@link MAX_DIFF_OCCURRENCES}; a block that would pass the cap is left out whole, so
 * every block shown is exact. The scan stops there (a `replace_all` over a repetitive file
 * has millions of matches).
 */
function replacementBlocks(content: string, oldText: string, newText: string, count: number): Block[] {
  const blocks: Block[] = [];
  let remaining = count;
  let shown = 0;
  let match = content.indexOf(oldText);
  while (match !== -1 && remaining > 0 && shown < MAX_DIFF_OCCURRENCES) {
    const start = lineStart(content, match);
    let end = lineEnd(content, match + oldText.length - 1);
    let replaced = 0;
    let cursor = start;
    let built = '';
    for (;;) {
      while (match !== -1 && remaining > 0 && match < end) {
        if (shown + replaced === MAX_DIFF_OCCURRENCES) return blocks;
        built += content.slice(cursor, match) + newText;
        cursor = match + oldText.length;
        end = Math.max(end, lineEnd(content, match + oldText.length - 1));
        replaced += 1;
        remaining -= 1;
        match = remaining > 0 ? content.indexOf(oldText, cursor) : -1;
      }
      const candidate = built + content.slice(cursor, end);
      // A replacement that removed the block's last newline joins the next line onto it: that
      // line changes too.
      if (candidate === '' || candidate.endsWith('\n') || end >= content.length) {
        built = candidate;
        break;
      }
      end = lineEnd(content, end);
    }
    blocks.push({ start, end, replaced, newText: built });
    shown += replaced;
  }
  return blocks;
}

/** Append `text` as diff lines with `prefix`; returns how many lines it was. */
function emit(out: string[], prefix: string, text: string): number {
  if (text === '') return 0;
  const lines = text.split('\n');
  const last = lines.pop()!;
  for (const line of lines) out.push(`${prefix}${line}\n`);
  if (last === '') return lines.length;
  out.push(`${prefix}${last}\n\\ No newline at end of file\n`);
  return lines.length + 1;
}

function range(start: number, length: number): string {
  // An empty side starts at the line before it, as diff and patch write it.
  return `${length === 0 ? start - 1 : start},${length}`;
}

/**
 * The unified diff of replacing the first `count` occurrences of `oldText` in `content` by
 * `newText` (`count` is 1, or every occurrence for `replace_all`), labelled `label`, at most
 * {@link MAX_DIFF_BYTES} JSON-encoded bytes.
 */
export function replacementDiff(
  content: string,
  oldText: string,
  newText: string,
  count: number,
  label: string,
): string {
  const blocks = replacementBlocks(content, oldText, newText, count);
  const hunks: Block[][] = [];
  for (const block of blocks) {
    const previous = hunks.at(-1);
    if (
      previous !== undefined &&
      countNewlines(content, previous.at(-1)!.end, block.start) <= 2 * CONTEXT_LINES
    ) {
      previous.push(block);
    } else {
      hunks.push([block]);
    }
  }
  const out = [`--- ${label}\n`, `+++ ${label}\n`];
  let delta = 0;
  for (const hunk of hunks) {
    let contextStart = hunk[0]!.start;
    for (let i = 0; i < CONTEXT_LINES && contextStart > 0; i += 1)
      contextStart = lineStart(content, contextStart - 1);
    let contextEnd = hunk.at(-1)!.end;
    for (let i = 0; i < CONTEXT_LINES && contextEnd < content.length; i += 1)
      contextEnd = lineEnd(content, contextEnd);
    const body: string[] = [];
    let oldCount = emit(body, ' ', content.slice(contextStart, hunk[0]!.start));
    let newCount = oldCount;
    hunk.forEach((block, index) => {
      oldCount += emit(body, '-', content.slice(block.start, block.end));
      newCount += emit(body, '+', block.newText);
      const gap = emit(body, ' ', content.slice(block.end, hunk[index + 1]?.start ?? contextEnd));
      oldCount += gap;
      newCount += gap;
    });
    const oldStart = countNewlines(content, 0, contextStart) + 1;
    out.push(`@@ -${range(oldStart, oldCount)} +${range(oldStart + delta, newCount)} @@\n`, ...body);
    delta += newCount - oldCount;
  }
  const shown = blocks.reduce((sum, block) => sum + block.replaced, 0);
  if (shown < count) out.push(`(${count - shown} more replacement(s) not shown)\n`);
  const diff = out.join('');
  const kept = headWithinJsonBytes(diff, MAX_DIFF_BYTES - Buffer.byteLength(JSON.stringify(TRUNCATION_NOTE)));
  return kept.length < diff.length ? kept + TRUNCATION_NOTE : diff;
}
