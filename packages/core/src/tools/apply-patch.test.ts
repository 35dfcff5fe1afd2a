import { describe, expect, it } from 'vitest';
import { applyHunks, parsePatch, PATCH_LIMITS, type Hunk, type PatchOperation } from './apply-patch.js';

function operations(text: string): readonly PatchOperation[] {
  const parsed = parsePatch(text);
  if (!parsed.ok) throw new Error(`expected a valid patch, got: ${parsed.error}`);
  return parsed.operations;
}

function parseError(text: string): string {
  const parsed = parsePatch(text);
  if (parsed.ok) throw new Error('expected the patch to be refused');
  return parsed.error;
}

function hunksOf(text: string): readonly Hunk[] {
  const [operation] = operations(text);
  if (operation?.type !== 'update') throw new Error('expected an update');
  return operation.hunks;
}

const patch = (...lines: string[]): string => ['*** Begin Patch', ...lines, '*** End Patch', ''].join('\n');

describe('parsePatch', () => {
  it('reads add, delete, update and move, in order', () => {
    expect(
      operations(
        patch(
          '*** Add File: hello.txt',
          '+Hello world',
          '+',
          '*** Update File: src/app.py',
          '*** Move to: src/main.py',
          '@@ def greet():',
          '-print("Hi")',
          '+print("Hello, world!")',
          '*** Delete File: obsolete.txt',
        ),
      ),
    ).toEqual([
      { type: 'add', path: 'hello.txt', content: 'Hello world\n\n' },
      {
        type: 'update',
        path: 'src/app.py',
        moveTo: 'src/main.py',
        hunks: [
          {
            contexts: ['def greet():'],
            lines: [
              { kind: '-', text: 'print("Hi")' },
              { kind: '+', text: 'print("Hello, world!")' },
            ],
            endOfFile: false,
          },
        ],
      },
      { type: 'delete', path: 'obsolete.txt' },
    ]);
  });

  it('splits hunks at @@, keeps nested @@ contexts, and reads *** End of File', () => {
    expect(
      hunksOf(
        patch(
          '*** Update File: a.py',
          ' first',
          '-old',
          '+new',
          '@@ class Base',
          '@@     def method(self):',
          '     x = 1',
          '-    return x',
          '+    return x + 1',
          '@@',
          ' tail',
          '+appended',
          '*** End of File',
        ),
      ),
    ).toEqual([
      {
        contexts: [],
        lines: [
          { kind: ' ', text: 'first' },
          { kind: '-', text: 'old' },
          { kind: '+', text: 'new' },
        ],
        endOfFile: false,
      },
      {
        contexts: ['class Base', '    def method(self):'],
        lines: [
          { kind: ' ', text: '    x = 1' },
          { kind: '-', text: '    return x' },
          { kind: '+', text: '    return x + 1' },
        ],
        endOfFile: false,
      },
      {
        contexts: [],
        lines: [
          { kind: ' ', text: 'tail' },
          { kind: '+', text: 'appended' },
        ],
        endOfFile: true,
      },
    ]);
  });

  it('is lenient where nothing is lost: CRLF, padded markers, empty context lines, a heredoc, unified headers', () => {
    const text = [
      "apply_patch <<'EOF'",
      '  *** Begin Patch  ',
      ' *** Update File: x.txt',
      '@@ -1,3 +1,3 @@',
      ' a',
      '',
      '-b',
      '+B',
      '*** End Patch ',
      'EOF',
    ].join('\r\n');
    expect(hunksOf(text)).toEqual([
      {
        contexts: [],
        lines: [
          { kind: ' ', text: 'a' },
          { kind: ' ', text: '' },
          { kind: '-', text: 'b' },
          { kind: '+', text: 'B' },
        ],
        endOfFile: false,
      },
    ]);
  });

  it('refuses malformed patches with the line and the reason', () => {
    expect(parseError('*** Update File: a\n-x\n*** End Patch')).toBe(
      "the patch must start with the line '*** Begin Patch'",
    );
    expect(parseError('*** Begin Patch\n*** Delete File: a\n')).toBe(
      "the patch must end with the line '*** End Patch'",
    );
    expect(parseError(patch())).toBe('the patch has no file operations');
    expect(parseError(patch('*** Add File: a.txt', 'no plus'))).toBe(
      "line 3: in '*** Add File:' every line of the new file starts with '+' (got no plus)",
    );
    expect(parseError(patch('*** Update File: a.txt', '*** Delete File: b.txt'))).toBe(
      "line 2: '*** Update File: a.txt' has no hunks",
    );
    expect(parseError(patch('*** Update File: a.txt', '@@ def f():', '*** End of File'))).toBe(
      "line 3: a hunk of '*** Update File: a.txt' has no lines",
    );
    expect(parseError(patch('*** Update File: a.txt', ' ctx', '!bang'))).toBe(
      "line 4: unexpected line in a hunk of a.txt: !bang (hunk lines start with ' ', '-' or '+'; hunks with '@@')",
    );
    expect(parseError(patch('*** Rename File: a.txt'))).toBe(
      "line 2: expected '*** Add File:', '*** Update File:', '*** Delete File:' or '*** End Patch', got *** Rename File: a.txt",
    );
    expect(parseError(patch('*** Delete File:   '))).toBe('line 2: the path is empty');
    expect(parseError(patch('*** Delete File: a\0b'))).toBe('line 2: the path contains a NUL byte');
  });

  it('is bounded: patch length, file operations and hunks', () => {
    expect(parseError('x'.repeat(PATCH_LIMITS.maxPatchCharacters + 1))).toContain('longer than');
    const manyFiles = Array.from({ length: PATCH_LIMITS.maxFiles + 1 }, (_, i) => `*** Delete File: f${i}`);
    expect(parseError(patch(...manyFiles))).toBe(
      `the patch has more than ${PATCH_LIMITS.maxFiles} file operations`,
    );
    const manyHunks = Array.from({ length: PATCH_LIMITS.maxHunks + 1 }, (_, i) => [
      `@@ c${i}`,
      `+x${i}`,
    ]).flat();
    expect(parseError(patch('*** Update File: a', ...manyHunks))).toBe(
      `the patch has more than ${PATCH_LIMITS.maxHunks} hunks`,
    );
  });
});

describe('applyHunks', () => {
  const apply = (original: string, ...lines: string[]) =>
    applyHunks(original, hunksOf(patch('*** Update File: f', ...lines)), 'f');

  it('replaces the lines its context finds, and ends the file with a newline', () => {
    expect(apply('a\nb\nc\n', ' a', '-b', '+B', ' c')).toEqual({
      ok: true,
      content: 'a\nB\nc\n',
      fuzz: 'exact',
    });
    expect(apply('a\nb', ' a', '-b', '+B')).toEqual({ ok: true, content: 'a\nB\n', fuzz: 'exact' });
    // Deleting every line leaves an empty file.
    expect(apply('only\n', '-only')).toEqual({ ok: true, content: '', fuzz: 'exact' });
  });

  it('finds hunks in order, each below the last, and places a pure addition below its @@ line', () => {
    const original = 'def f():\n    return 1\n\ndef g():\n    return 1\n';
    expect(apply(original, '@@ def g():', '-    return 1', '+    return 2')).toMatchObject({
      content: 'def f():\n    return 1\n\ndef g():\n    return 2\n',
    });
    // Two identical hunks change the first then the second occurrence.
    expect(
      apply(original, '-    return 1', '+    return 3', '@@', '-    return 1', '+    return 4'),
    ).toMatchObject({
      content: 'def f():\n    return 3\n\ndef g():\n    return 4\n',
    });
    expect(apply(original, '@@ def f():', '+    """doc"""')).toMatchObject({
      content: 'def f():\n    """doc"""\n    return 1\n\ndef g():\n    return 1\n',
    });
    // Without a context line, added lines go at the end.
    expect(apply('a\n', '+z')).toMatchObject({ content: 'a\nz\n' });
  });

  it('matches exactly first, then ignoring trailing whitespace, all whitespace, typographic punctuation', () => {
    expect(apply('x = 1   \ny\n', ' x = 1', '-y', '+Y')).toEqual({
      ok: true,
      content: 'x = 1   \nY\n',
      fuzz: 'trailing-whitespace',
    });
    expect(apply('    indented\nz\n', ' indented', '-z', '+Z')).toMatchObject({ fuzz: 'whitespace' });
    expect(apply('say(“hi” – now)\n', '-say("hi" - now)', '+say("bye")')).toEqual({
      ok: true,
      content: 'say("bye")\n',
      fuzz: 'punctuation',
    });
    // Each level is tried over the whole rest of the file before the next: an exact match
    // further down wins over a fuzzy one above it.
    expect(apply('k  \nk\n', '-k', '+K')).toEqual({ ok: true, content: 'k  \nK\n', fuzz: 'exact' });
  });

  it('anchors *** End of File hunks at the end', () => {
    expect(apply('end\nmiddle\nend\n', '-end', '+END', '*** End of File')).toMatchObject({
      content: 'end\nmiddle\nEND\n',
    });
    expect(apply('end\nlast\n', '-end', '+END', '*** End of File')).toMatchObject({ ok: false });
  });

  it('reads a last empty context line as the final newline', () => {
    expect(apply('a\nb\n', ' a', '-b', '+c', ' ')).toEqual({ ok: true, content: 'a\nc\n', fuzz: 'exact' });
  });

  it('keeps CRLF files CRLF', () => {
    expect(apply('one\r\ntwo\r\n', ' one', '-two', '+2')).toEqual({
      ok: true,
      content: 'one\r\n2\r\n',
      fuzz: 'exact',
    });
  });

  it('says which hunk and which lines it cannot find', () => {
    expect(apply('a\nb\n', ' a', '-c', '+C')).toEqual({
      ok: false,
      error: 'hunk 1: cannot find these lines in f:\n  a\n  c',
    });
    expect(apply('a\nb\n', '@@ def nope():', '-a', '+A')).toEqual({
      ok: false,
      error: "hunk 1: cannot find the context line '@@ def nope():' in f",
    });
    // The second hunk is searched only below the first.
    expect(apply('a\nb\n', '-b', '+B', '@@', '-a', '+A')).toEqual({
      ok: false,
      error: 'hunk 2: cannot find these lines in f below line 2:\n  a',
    });
  });

  it('refuses a patch whose matching costs more than its budget instead of searching on', () => {
    const original = 'a\n'.repeat(20_000);
    const hunks = hunksOf(
      patch('*** Update File: f', ...Array.from({ length: 5_000 }, () => ' a'), '-b', '+c'),
    );
    const started = performance.now();
    expect(applyHunks(original, hunks, 'f', { remaining: 1_000_000 })).toEqual({
      ok: false,
      error:
        'matching the hunks took too long (the patch is too costly to place); give more distinctive context',
    });
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
