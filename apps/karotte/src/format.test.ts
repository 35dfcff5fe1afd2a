import { describe, expect, it } from 'vitest';
import { escapeForDisplay } from '@karotte/base';
import type { HostCheck } from '@karotte/core';
import { renderCheck } from './commands/check.js';
import { renderRedteamTable } from './commands/redteam.js';
import type { RedteamRow } from './redteam/run.js';
import {
  DEFAULT_WIDTH,
  displaySafe,
  fitColumns,
  indentWrapped,
  shortenCommand,
  table,
  tableTruncates,
  terminalWidth,
  truncate,
  wrap,
} from './format.js';

const longest = (text: string): number => Math.max(...text.split('\n').map((line) => line.length));

describe('terminalWidth', () => {
  it("is the terminal's columns, else $COLUMNS, else 80", () => {
    expect(terminalWidth({ isTTY: true, columns: 132 })).toBe(132);
    expect(terminalWidth({ isTTY: false, columns: 132 })).toBe(DEFAULT_WIDTH);
    expect(terminalWidth({}, { COLUMNS: '100' })).toBe(100);
    expect(terminalWidth(undefined, { COLUMNS: 'wide' })).toBe(80);
    expect(terminalWidth({ isTTY: true, columns: 0 }, { COLUMNS: '-3' })).toBe(80);
  });
});

describe('truncate, wrap, indentWrapped', () => {
  it('cuts with an ellipsis only when needed', () => {
    expect(truncate('abcdef', 6)).toBe('abcdef');
    expect(truncate('abcdefg', 6)).toBe('abcde…');
    expect(truncate('abc', 1)).toBe('…');
  });

  it('wraps at spaces, splits a word longer than the width, never loses a character', () => {
    expect(wrap('the quick brown fox', 10)).toEqual(['the quick', 'brown fox']);
    expect(wrap('0123456789abcdef x', 6)).toEqual(['012345', '6789ab', 'cdef x']);
    expect(wrap('', 10)).toEqual(['']);
  });

  it('indents the first line and hangs the rest', () => {
    expect(indentWrapped('one two three four five six seven eight', 30, '  why: ')).toBe(
      '  why: one two three four five\n       six seven eight',
    );
  });
});

describe('table', () => {
  const header = ['name', 'state', 'evidence'];
  const rows = [
    ['memory', 'prevented', 'limit 67108864 bytes read back; swap: memsw_equals_memory'],
    ['pids', 'prevented', 'limit 64 read back'],
  ];

  it('without a width prints every cell in full, aligned, without trailing spaces', () => {
    expect(table(header, rows)).toBe(
      [
        'name    state      evidence',
        '------  ---------  ---------------------------------------------------------',
        'memory  prevented  limit 67108864 bytes read back; swap: memsw_equals_memory',
        'pids    prevented  limit 64 read back',
      ].join('\n'),
    );
  });

  it('fits a width by cutting the flexible column', () => {
    const text = table(header, rows, { width: 40 });
    expect(longest(text)).toBe(40);
    expect(text.split('\n')[2]).toBe('memory  prevented  limit 67108864 bytes…');
    expect(text.split('\n')[3]).toBe('pids    prevented  limit 64 read back');
    expect(tableTruncates(header, rows, { width: 40 })).toBe(true);
    expect(tableTruncates(header, rows, { width: 200 })).toBe(false);
  });

  it('wraps the flexible column instead, showing everything within the width', () => {
    const text = table(header, rows, { width: 40, overflow: 'wrap' });
    expect(longest(text)).toBeLessThanOrEqual(40);
    expect(text.split('\n').slice(2, 5)).toEqual([
      'memory  prevented  limit 67108864 bytes',
      '                   read back; swap:',
      '                   memsw_equals_memory',
    ]);
    expect(tableTruncates(header, rows, { width: 40, overflow: 'wrap' })).toBe(false);
  });

  it('shares the width between flexible columns, the narrow one keeping what it needs', () => {
    // Fixed column 4 wide, two gaps of 2: 72 left for columns wanting 10 and 100.
    expect(fitColumns([4, 10, 100], [4, 8, 8], 80, [1, 2])).toEqual([4, 10, 62]);
    expect(fitColumns([4, 50, 100], [4, 8, 8], 80, [1, 2])).toEqual([4, 36, 36]);
    // Never below a column's minimum, even when that overflows the width.
    expect(fitColumns([30, 50, 100], [30, 8, 8], 40, [1, 2])).toEqual([30, 8, 8]);
  });
});

describe('shortenCommand', () => {
  it('puts a command on one line with its line breaks marked, cut to the width', () => {
    expect(shortenCommand('echo 42 > answer.txt\nls   -la\t/tmp\n', 80)).toBe(
      'echo 42 > answer.txt ⏎ ls -la /tmp',
    );
    expect(shortenCommand(`cat ${'x'.repeat(200)}`, 20)).toBe(`cat ${'x'.repeat(15)}…`);
    // Whitespace (a lone carriage return too) is a space; other controls are visible escapes.
    expect(shortenCommand('printf "\\033[2J"\u001b[31m red\rx\u0007\u202e', 80)).toBe(
      'printf "\\033[2J"\\u{1b}[31m red x\\u{7}\\u{202e}',
    );
  });
});

describe('displaySafe', () => {
  it('escapes controls, bidi and zero-width characters as escapeForDisplay does, and keeps the rest', () => {
    const text = 'a\u001b[2J\r\n\t\u0007\u007f\u009b\u202e\u2066\u200b\ufeff\ud800 é ✓ 中';
    expect(displaySafe(text)).toBe(
      'a\\u{1b}[2J\\r\\n\\t\\u{7}\\u{7f}\\u{9b}\\u{202e}\\u{2066}\\u{200b}\\u{feff}\\u{d800} é ✓ 中',
    );
    for (const char of text) {
      if (char !== '\\') expect(displaySafe(char)).toBe(escapeForDisplay(char));
    }
  });

  it('keeps backslashes, so text escaped before comes out unchanged', () => {
    const escaped = escapeForDisplay('x\u001b[2J\\y');
    expect(displaySafe(escaped)).toBe(escaped);
    expect(displaySafe('C:\\dir\\n')).toBe('C:\\dir\\n');
  });

  it('is fast enough for a long command (1 MiB)', () => {
    const started = performance.now();
    expect(shortenCommand(`echo ${'x\u001b'.repeat(512 * 1024)}`, 80)).toHaveLength(80);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('renderCheck', () => {
  const report = (ok: boolean): HostCheck => ({
    ok,
    root: true,
    durationMs: 250,
    defenses: [
      {
        name: 'user_separation',
        contract: 'prevented',
        mechanism: 'a fresh uid/gid from a reserved range, no supplementary groups, no subordinate ids',
        reason: 'student ran as uid 2000420913 gid=2000420913, groups ""',
      },
      {
        name: 'grader_interpreter',
        contract: ok ? 'prevented' : 'not_supported',
        mechanism: "graders run with the harness's own Node.js: a root-owned system install",
        reason: ok
          ? '/usr/bin/node is root-owned and writable by no one else'
          : 'interpreter /tmp/karotte-x/node: refusing /tmp/karotte-x/node: /tmp is writable by group or others',
      },
      {
        name: 'rootless_tier',
        contract: 'not_supported',
        mechanism: 'user namespaces',
        reason: 'no rootless tier is offered',
      },
    ],
  });

  it('fits 80 columns (not the 278 of the full evidence) and says where the rest is', () => {
    const text = renderCheck(report(true), 80, false);
    expect(longest(text)).toBeLessThanOrEqual(DEFAULT_WIDTH);
    const tableLines = text.split('\n').slice(0, 5);
    expect(tableLines[0]).toMatch(/^defense\s+enforcement\s+mechanism\s+evidence$/);
    expect(tableLines[3]).toMatch(/^grader interpreter\s+prevented\s+/);
    expect(text).toContain('Every defense is enforced by the kernel on this host (checked in 250 ms).');
    expect(text).toContain('karotte check --verbose');
  });

  it('with --verbose wraps every mechanism and evidence in full within the width', () => {
    const text = renderCheck(report(true), 80, true);
    for (const line of text.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
    const words = new Set(text.split(/\s+/));
    for (const defense of report(true).defenses) {
      for (const word of `${defense.mechanism} ${defense.reason}`.split(' ')) expect(words).toContain(word);
    }
    expect(text).not.toContain('…');
    expect(text).not.toContain('--verbose');
  });

  it('names what is missing with its full reason, wrapped', () => {
    const text = renderCheck(report(false), 60, false);
    expect(text.replace(/\s+/g, ' ')).toContain(
      '1 defense(s) are weaker or missing on this host: grader_interpreter.',
    );
    const after = text.slice(text.indexOf('weaker or missing'));
    expect(after.replace(/\s+/g, ' ')).toContain(
      'grader interpreter: interpreter /tmp/karotte-x/node: refusing /tmp/karotte-x/node: /tmp is writable by group or others',
    );
    for (const line of after.split('\n')) expect(line.length).toBeLessThanOrEqual(60);
  });
});

describe('renderRedteamTable', () => {
  const row = (id: string, ok: boolean, asExpected: boolean): RedteamRow => ({
    id,
    class: 'weird-files',
    kind: 'attack',
    source: 'catalog',
    status: ok ? 'failed' : 'passed',
    score: ok ? 0 : 1,
    reason: ok ? 'SYMLINK, NOT_REGULAR_FILE, and a long tail of further explanation' : 'graded 1',
    durationMs: 3600,
    ok,
    stoppedBy: ok ? ['SYMLINK'] : [],
    expected: ['SYMLINK', 'NOT_REGULAR_FILE'],
    asExpected,
  });

  it('heads every column, the last one outcome, and fits the width', () => {
    const text = renderRedteamTable(
      [row('symlink-answer-key', true, true), row('fifo', true, false), row('leak', false, false)],
      80,
    );
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^attack\s+class\s+verdict\s+score\s+reason\s+time\s+outcome$/);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
    expect(lines[2]).toMatch(/^symlink-answer-key\s+weird-files\s+failed\s+0\s+SYMLINK.*\s3\.6 s\s+ok$/);
    expect(lines[3]).toMatch(/\s3\.6 s\s+ok, expect/);
    expect(lines[4]).toMatch(/\sFAIL$/);
  });
});
