import { escapeForDisplay } from '@karotte/base';

/** `950 ms`, `3.2 s`, `2 min 5 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms - minutes * 60_000) / 1000)} s`;
}

/** The width of a table or a line when nothing says otherwise (a pipe, a file, a CI log). */
export const DEFAULT_WIDTH = 80;

/** Where output goes, as far as its width is concerned (process.stdout fits). */
export interface WidthSource {
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/**
 * The width to fit output to: the terminal's columns when `stream` is a terminal, else
 * `COLUMNS` from the environment when it is a positive integer, else {@link DEFAULT_WIDTH}.
 */
export function terminalWidth(
  stream: WidthSource | undefined,
  env: Readonly<Record<string, string | undefined>> = {},
): number {
  if (stream?.isTTY === true && typeof stream.columns === 'number' && stream.columns > 0) {
    return stream.columns;
  }
  const columns = Number(env['COLUMNS']);
  if (Number.isInteger(columns) && columns > 0) return columns;
  return DEFAULT_WIDTH;
}

/** `text` cut to `width` characters, the last one `…` when something was cut. */
export function truncate(text: string, width: number): string {
  if (text.length <= width) return text;
  if (width <= 1) return '…'.slice(0, Math.max(width, 0));
  return `${text.slice(0, width - 1)}…`;
}

/**
 * `text` broken into lines of at most `width` characters, at spaces where it can be (a word
 * longer than the width is split). Never returns an empty list.
 */
export function wrap(text: string, width: number): string[] {
  const size = Math.max(1, width);
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    let rest = word;
    while (rest.length > 0) {
      if (line === '') {
        if (rest.length <= size) {
          line = rest;
          rest = '';
        } else {
          lines.push(rest.slice(0, size));
          rest = rest.slice(size);
        }
      } else if (line.length + 1 + rest.length <= size) {
        line = `${line} ${rest}`;
        rest = '';
      } else {
        lines.push(line);
        line = '';
      }
    }
  }
  if (line !== '' || lines.length === 0) lines.push(line);
  return lines;
}

/** How {@link table} fits a width. */
export interface TableOptions {
  /** The width to fit (see {@link terminalWidth}). @default no limit: every cell in full */
  readonly width?: number;
  /** Indexes of the columns that shrink to fit; the others keep their width. @default [the last] */
  readonly flexible?: readonly number[];
  /**
   * `truncate`: a cell longer than its column ends in `…`; `wrap`: it goes on over the next
   * lines, at spaces (every character shown).
   * @default 'truncate'
   */
  readonly overflow?: 'truncate' | 'wrap';
}

/** The least a flexible column shrinks to (its header, at least this). */
const MIN_FLEXIBLE = 8;
const GAP = '  ';

/**
 * Column widths that fit `width`: fixed columns keep their natural width, the flexible ones
 * share the rest, the narrowest first (a column that needs less than its share leaves the
 * difference to the others), none below its header or {@link MIN_FLEXIBLE}. When even the
 * minimum does not fit, the table is wider than `width`.
 */
export function fitColumns(
  natural: readonly number[],
  minimum: readonly number[],
  width: number,
  flexible: readonly number[],
): number[] {
  const widths = [...natural];
  const total = natural.reduce((sum, w) => sum + w, 0) + GAP.length * Math.max(0, natural.length - 1);
  if (total <= width) return widths;
  const flex = flexible.filter((i) => i >= 0 && i < natural.length);
  const fixed = natural.reduce((sum, w, i) => (flex.includes(i) ? sum : sum + w), 0);
  let remaining = width - fixed - GAP.length * Math.max(0, natural.length - 1);
  const order = [...flex].sort((a, b) => natural[a]! - natural[b]!);
  order.forEach((index, position) => {
    const share = Math.floor(remaining / (order.length - position));
    const least = Math.min(natural[index]!, minimum[index]!);
    widths[index] = Math.max(least, Math.min(natural[index]!, share));
    remaining -= widths[index];
  });
  return widths;
}

/**
 * Render rows as an aligned text table with a header rule. With `width`, the flexible
 * columns shrink until the table fits (see {@link TableOptions}); the last column is never
 * padded and no line has trailing spaces.
 */
export function table(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  options: TableOptions = {},
): string {
  const widths = columnWidths(header, rows, options);
  const wrapCells = options.overflow === 'wrap';
  const render = (cells: readonly string[], multiline: boolean): string[] => {
    const columns = widths.map((w, i) => {
      const cell = cells[i] ?? '';
      if (cell.length <= w) return [cell];
      return multiline && wrapCells ? wrap(cell, w) : [truncate(cell, w)];
    });
    const height = Math.max(...columns.map((c) => c.length));
    return Array.from({ length: height }, (_, line) =>
      columns
        .map((c, i) => (i === columns.length - 1 ? (c[line] ?? '') : (c[line] ?? '').padEnd(widths[i]!)))
        .join(GAP)
        .trimEnd(),
    );
  };
  return [
    ...render(header, false),
    widths.map((w) => '-'.repeat(w)).join(GAP),
    ...rows.flatMap((row) => render(row, true)),
  ].join('\n');
}

/** The width of each column of {@link table} with these options. */
function columnWidths(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  options: TableOptions,
): number[] {
  const natural = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const minimum = header.map((h) => Math.max(h.length, MIN_FLEXIBLE));
  return options.width === undefined
    ? natural
    : fitColumns(natural, minimum, options.width, options.flexible ?? [header.length - 1]);
}

/** True when {@link table} with these options cuts a cell (so a fuller view is worth naming). */
export function tableTruncates(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  options: TableOptions,
): boolean {
  if (options.overflow === 'wrap') return false;
  const widths = columnWidths(header, rows, options);
  return rows.some((row) => row.some((cell, i) => cell.length > (widths[i] ?? Infinity)));
}

/**
 * `text` as lines of at most `width` characters (the indents counted): the first starts with
 * `first`, the others with `rest` (by default as many spaces as `first` is long).
 */
export function indentWrapped(
  text: string,
  width: number,
  first: string,
  rest: string = ' '.repeat(first.length),
): string {
  const indent = Math.max(first.length, rest.length);
  return wrap(text, Math.max(20, width - indent))
    .map((line, i) => `${i === 0 ? first : rest}${line}`)
    .join('\n');
}

/**
 * `text` safe to print on a terminal or in a log: the characters that could move the cursor,
 * clear the screen, ring the bell, rewrite the line or reorder what is shown (C0 and C1 controls
 * such as ESC, CR and BEL, DEL, bidi embeddings, overrides and isolates, the zero-width
 * characters U+200B–U+200F and U+FEFF, lone surrogates) become visible escapes (`\u{1b}`, `\r`,
 * `\n`, …), exactly those @karotte/base's `escapeForDisplay` escapes and as it writes them;
 * everything else is kept, backslashes too, so a string escaped before (core escapes tool names)
 * comes out unchanged. Every string the student, the replay file or a grader can choose goes
 * through this before the app prints it.
 */
export function displaySafe(text: string): string {
  let out = '';
  for (const char of text) out += char === '\\' ? char : escapeForDisplay(char, Infinity);
  return out;
}

/**
 * A command as one short line for a progress display: each line break becomes ` ⏎ `, each run
 * of whitespace (tabs, lone carriage returns included) one space, any other control or format
 * character a visible escape ({@link displaySafe}), then it is cut to `width` with `…`.
 */
export function shortenCommand(command: string, width: number): string {
  const flat = command
    .split(/\r?\n/)
    .map((line) => displaySafe(line.replace(/\s+/g, ' ').trim()))
    .filter((line) => line !== '')
    .join(' ⏎ ');
  return truncate(flat, Math.max(10, width));
}
