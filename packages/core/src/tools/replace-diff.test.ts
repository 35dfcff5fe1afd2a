import { describe, expect, it } from 'vitest';
import { MAX_DIFF_BYTES, MAX_DIFF_OCCURRENCES, replacementDiff } from './replace-diff.js';

/** Split keeping each line's newline (the last line may have none). */
function linesOf(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/**
 * Apply a unified diff the way `patch` does, strictly: every context and removed line must be
 * the old file's line at that place, newline or its absence included.
 */
function applyUnifiedDiff(old: string, diff: string): string {
  const oldLines = linesOf(old);
  const body = diff.split('\n');
  const out: string[] = [];
  let oldAt = 0;
  let i = 2; // after the --- and +++ lines
  while (i < body.length && body[i]!.startsWith('@@')) {
    const header = /^@@ -(\d+),(\d+) \+\d+,\d+ @@$/.exec(body[i]!);
    if (header === null) throw new Error(`bad hunk header ${body[i]}`);
    const start = Number(header[2]) === 0 ? Number(header[1]) : Number(header[1]) - 1;
    while (oldAt < start) out.push(oldLines[oldAt++]!);
    i += 1;
    while (i < body.length && /^[ +-]/.test(body[i]!)) {
      const kind = body[i]![0];
      let line = `${body[i]!.slice(1)}\n`;
      if (body[i + 1] === '\\ No newline at end of file') {
        line = line.slice(0, -1);
        i += 1;
      }
      if (kind === '+') out.push(line);
      else {
        if (oldLines[oldAt] !== line)
          throw new Error(
            `line ${oldAt + 1} is ${JSON.stringify(oldLines[oldAt])}, not ${JSON.stringify(line)}`,
          );
        if (kind === ' ') out.push(line);
        oldAt += 1;
      }
      i += 1;
    }
  }
  while (oldAt < oldLines.length) out.push(oldLines[oldAt++]!);
  return out.join('');
}

/** A small deterministic PRNG (mulberry32), so a failing seed can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function replaceFirst(content: string, oldText: string, newText: string): string {
  const at = content.indexOf(oldText);
  return content.slice(0, at) + newText + content.slice(at + oldText.length);
}

describe('replacementDiff', () => {
  it('shows one replacement with three lines of context', () => {
    const content = ['1', '2', '3', '4', 'old', '6', '7', '8', '9', ''].join('\n');
    expect(replacementDiff(content, 'old', 'new', 1, '/f.txt')).toBe(
      [
        '--- /f.txt',
        '+++ /f.txt',
        '@@ -2,7 +2,7 @@',
        ' 2',
        ' 3',
        ' 4',
        '-old',
        '+new',
        ' 6',
        ' 7',
        ' 8',
        '',
      ].join('\n'),
    );
  });

  it('marks a last line without a newline', () => {
    expect(replacementDiff('a\nb', 'b', 'c', 1, 'f')).toBe(
      '--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n',
    );
  });

  it('shows the next line as changed when a replacement removes a newline', () => {
    const diff = replacementDiff('a\nb\nc\n', 'a\n', 'A', 1, 'f');
    expect(diff).toBe('--- f\n+++ f\n@@ -1,3 +1,2 @@\n-a\n-b\n+Ab\n c\n');
  });

  it('writes an emptied file as patch expects it', () => {
    expect(replacementDiff('gone\n', 'gone\n', '', 1, 'f')).toBe('--- f\n+++ f\n@@ -1,1 +0,0 @@\n-gone\n');
    expect(applyUnifiedDiff('gone\n', replacementDiff('gone\n', 'gone\n', '', 1, 'f'))).toBe('');
  });

  it('counts replacements past the cap instead of showing them, and stays within its bytes', () => {
    const content = 'x\n\n\n\n\n\n\n\n'.repeat(200);
    const diff = replacementDiff(content, 'x', 'y', 200, 'f');
    expect(diff.match(/^-x$/gm)).toHaveLength(MAX_DIFF_OCCURRENCES);
    expect(diff).toContain(`(${200 - MAX_DIFF_OCCURRENCES} more replacement(s) not shown)`);
    const huge = replacementDiff('a\n', 'a', 'b'.repeat(200_000), 1, 'f');
    expect(Buffer.byteLength(JSON.stringify(huge))).toBeLessThanOrEqual(MAX_DIFF_BYTES);
    expect(huge.endsWith('\n(diff truncated)\n')).toBe(true);
  });

  it('is exact: patch turns the old file into the new one (500 random cases)', () => {
    // The checker itself refuses a diff that does not fit the file it is applied to.
    expect(() => applyUnifiedDiff('a\nX\n', replacementDiff('a\nb\n', 'b', 'c', 1, 'f'))).toThrow('line 2');
    expect(() => applyUnifiedDiff('a\nb', replacementDiff('a\nb\n', 'b', 'c', 1, 'f'))).toThrow('line 2');
    const pieces = ['a', 'b', 'ab', '\n', '\n\n', 'x y', '\t'];
    for (let seed = 1; seed <= 500; seed += 1) {
      const next = random(seed);
      const pick = (): string => pieces[Math.floor(next() * pieces.length)]!;
      const content = Array.from({ length: 2 + Math.floor(next() * 40) }, pick).join('');
      const from = Math.floor(next() * content.length);
      const oldText = content.slice(from, from + 1 + Math.floor(next() * 4));
      const newText = Array.from({ length: Math.floor(next() * 3) }, pick).join('');
      const all = next() < 0.5;
      const count = all ? content.split(oldText).length - 1 : 1;
      if (count > MAX_DIFF_OCCURRENCES) continue;
      const expected = all ? content.split(oldText).join(newText) : replaceFirst(content, oldText, newText);
      const diff = replacementDiff(content, oldText, newText, count, 'f');
      let applied: string;
      try {
        applied = applyUnifiedDiff(content, diff);
      } catch (error) {
        throw new Error(`seed ${seed}: ${(error as Error).message}\n${diff}`, { cause: error });
      }
      expect(applied, `seed ${seed}`).toBe(expected);
    }
  });

  it('stays fast on 5 MiB with a replacement on every line', () => {
    const content = 'line of text\n'.repeat(400_000);
    const started = performance.now();
    const diff = replacementDiff(content, 'text', 'words', 400_000, 'f');
    expect(performance.now() - started).toBeLessThan(1000);
    expect(diff).toContain('(399950 more replacement(s) not shown)');
  });
});
