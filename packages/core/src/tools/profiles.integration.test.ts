// Every tool profile driven against a real sandbox world (createSandboxWorld, as root): what
// each tool does, and every hostile file through every file tool — a FIFO, /dev/zero, a sparse
// giant, links into hidden data, a root-only file, /etc/shadow and /root, a multi-GB single
// line, invalid UTF-8, a directory, a NUL in the path — each answered with a clear tool error
// within its time bound, the secret never shown.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidsOfUid } from '../../../../test/support/index.js';
import { createSandboxWorld } from '../sandbox-world.js';
import { loadTask } from '../task.js';
import type { ShellOutcome, StudentWorld } from '../world.js';
import { createToolProfile } from './index.js';
import type { ToolProfile, ToolRunResult } from './profile.js';

const SECRET = `karotte-secret-${process.pid}-${Date.now()}`;
/** The bound every hostile call must answer within (the file tools' own is 30 s). */
const HOSTILE_BOUND_MS = 10_000;

let world: StudentWorld;
let taskDir: string;
let visibleDir: string;
let home: string;
const abort = new AbortController();

beforeAll(async () => {
  // A task under /var/cache (a directory the student's host view shows): only the sandbox's
  // cover of the task directory keeps its hidden/ and grader out of reach; its files are 0644.
  taskDir = fs.mkdtempSync('/var/cache/karotte-tools-task-');
  fs.chmodSync(taskDir, 0o755);
  fs.mkdirSync(path.join(taskDir, 'hidden'));
  fs.writeFileSync(path.join(taskDir, 'hidden', 'answer.txt'), `${SECRET}\n`, { mode: 0o644 });
  fs.mkdirSync(path.join(taskDir, 'student'));
  fs.writeFileSync(path.join(taskDir, 'student', 'notes.txt'), 'alpha\nbeta\ngamma\n');
  fs.writeFileSync(path.join(taskDir, 'grade.mjs'), `// ${SECRET}\n`, { mode: 0o644 });
  fs.writeFileSync(
    path.join(taskDir, 'task.json'),
    JSON.stringify({
      id: 'karotte-tools',
      instructions: 'Use the tools.',
      submission: ['answer.txt'],
      grader: { script: 'grade.mjs' },
      limits: {
        memoryBytes: 512 * 1024 * 1024,
        pids: 256,
        diskBytes: 64 * 1024 * 1024,
        commandTimeoutMs: 20_000,
      },
    }),
  );
  // A root-only file in a directory the student sees: only the student's uid stops a read.
  visibleDir = fs.mkdtempSync('/var/cache/karotte-tools-visible-');
  fs.chmodSync(visibleDir, 0o755);
  fs.writeFileSync(path.join(visibleDir, 'root-only.txt'), `${SECRET}\n`, { mode: 0o600 });
  const task = await loadTask(taskDir);
  world = await createSandboxWorld({
    task,
    limits: { memoryBytes: 512 * 1024 * 1024, pids: 256, diskBytes: 64 * 1024 * 1024 },
    abortSignal: abort.signal,
  });
  home = (await world.exec('printf %s "$HOME"', { timeoutMs: 10_000 })).stdout;
  const setup = await world.exec(
    [
      'set -e',
      'mkfifo pipe',
      'ln -s /dev/zero zero',
      'truncate -s 20G sparse.bin',
      // A multi-GB single line: text first, then a 3 GiB hole (no newline anywhere).
      "printf 'head of a giant line ' > giant-line.txt && truncate -s 3G giant-line.txt",
      `ln -s ${taskDir}/hidden/answer.txt hidden-link`,
      `ln -s ${taskDir}/grade.mjs grader-link`,
      `ln -s ${visibleDir}/root-only.txt root-only-link`,
      'ln -s /etc/shadow shadow-link',
      'ln -s /root root-link',
      "printf 'caf\\xe9\\n' > latin1.txt",
      'mkdir -p somedir/inner',
      "head -c 3145728 /dev/zero | tr '\\0' x > long-line.txt",
    ].join('\n'),
    { timeoutMs: 20_000 },
  );
  expect(setup.exitCode, setup.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  abort.abort();
  const uid = world?.uid;
  await world?.destroy();
  if (uid !== undefined) expect(pidsOfUid(uid)).toEqual([]);
  fs.rmSync(taskDir, { recursive: true, force: true });
  fs.rmSync(visibleDir, { recursive: true, force: true });
}, 120_000);

async function call(profile: ToolProfile, name: string, args: unknown): Promise<ToolRunResult> {
  return profile.call(
    { id: 'call', name, arguments: args },
    {
      world,
      commandTimeoutMs: 20_000,
      abortSignal: abort.signal,
    },
  );
}

function text(result: ToolRunResult): string {
  return result.content
    .map((part) => (part.type === 'text' ? part.text : `[image ${part.mediaType}]`))
    .join('\n');
}

/** A command in the student's shell, from the home directory (where relative tool paths start). */
function sh(command: string): Promise<ShellOutcome> {
  return world.exec(`cd ~ && ${command}`, { timeoutMs: 10_000 });
}

/** The student's view of a file, through the shell. */
async function cat(file: string): Promise<string> {
  return (await sh(`cat ${file}`)).stdout;
}

function png(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', zlib.deflateSync(Buffer.alloc(height * (1 + width * 3)))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const karotte = createToolProfile('karotte');
const anthropic = createToolProfile('anthropic', { maxCharacters: 2000 });
const openai = createToolProfile('openai');

describe('karotte profile', () => {
  it('bash runs as the contract says', async () => {
    const result = await call(karotte, 'bash', { command: 'echo hi; id -u', timeoutMs: 5000 });
    expect(result.ok).toBe(true);
    expect(result.shell).toMatchObject({ exitCode: 0, timedOut: false });
    expect(text(result)).toBe(`hi\n${world.uid}\n\n[exit code: 0]`);
    const timed = await call(karotte, 'bash', { command: 'sleep 30', timeoutMs: 500 });
    expect(timed).toMatchObject({ ok: false, shell: { timedOut: true } });
  });

  it('view_lines_in_file shows a range as JSON, refuses one past the end with the line count', async () => {
    const result = await call(karotte, 'view_lines_in_file', {
      file_path: `${home}/notes.txt`,
      from_line: 2,
      to_line: 3,
    });
    expect(result.ok).toBe(true);
    expect(JSON.parse(text(result))).toEqual({
      file_path: `${home}/notes.txt`,
      from_line: 2,
      to_line: 3,
      content: 'beta\ngamma\n',
    });
    const past = await call(karotte, 'view_lines_in_file', {
      file_path: `${home}/notes.txt`,
      from_line: 9,
      to_line: 10,
    });
    expect(text(past)).toBe(`File ${home}/notes.txt has 3 lines, but you requested lines 9-10`);
    const long = await call(karotte, 'view_lines_in_file', {
      file_path: `${home}/long-line.txt`,
      from_line: 1,
      to_line: 1,
    });
    const content = (JSON.parse(text(long)) as { content: string }).content;
    expect(content).toMatch(
      /^x+\n\n\[\.\.\. output truncated: exceeded 393216 bytes; request a narrower line range \.\.\.\]$/,
    );
    expect(Buffer.byteLength(JSON.stringify(content))).toBeLessThanOrEqual(384 * 1024);
  });

  it('replace_in_file replaces the first occurrence (or all) and answers with the diff', async () => {
    await sh("printf 'one\\ntwo\\none\\n' > edit.txt");
    const first = await call(karotte, 'replace_in_file', {
      file_path: `${home}/edit.txt`,
      old: 'one',
      new: 'ONE',
    });
    expect(JSON.parse(text(first))).toEqual({
      result: 'Replacement successful',
      diff: `--- ${home}/edit.txt\n+++ ${home}/edit.txt\n@@ -1,3 +1,3 @@\n-one\n+ONE\n two\n one\n`,
    });
    expect(await cat('edit.txt')).toBe('ONE\ntwo\none\n');
    await call(karotte, 'replace_in_file', {
      file_path: `${home}/edit.txt`,
      old: 'o',
      new: '0',
      replace_all: true,
    });
    expect(await cat('edit.txt')).toBe('ONE\ntw0\n0ne\n');
    expect(
      text(await call(karotte, 'replace_in_file', { file_path: `${home}/edit.txt`, old: 'zzz', new: 'y' })),
    ).toBe(`String not found in file: ${home}/edit.txt`);
    // replace_all amplification past 10 MiB is refused before anything is written.
    await sh("head -c 1048576 /dev/zero | tr '\\0' a > amp.txt");
    const amplified = await call(karotte, 'replace_in_file', {
      file_path: `${home}/amp.txt`,
      old: 'a',
      new: 'bbbbbbbbbbbbbbbb',
      replace_all: true,
    });
    expect(text(amplified)).toMatch(
      /^Replacement would grow .* over the 10485760-byte limit \(1048576 occurrence\(s\)/,
    );
    expect((await sh('wc -c < amp.txt')).stdout.trim()).toBe('1048576');
  });

  it('view_image_file returns an image part, and refuses a non-image, a large one and an oversized one', async () => {
    fs.writeFileSync(path.join(world.workDir, 'pic.png'), png(4, 3));
    fs.writeFileSync(path.join(world.workDir, 'wide.png'), png(2001, 1));
    fs.chownSync(path.join(world.workDir, 'pic.png'), world.uid, world.uid);
    fs.chownSync(path.join(world.workDir, 'wide.png'), world.uid, world.uid);
    const image = await call(karotte, 'view_image_file', { file_path: `${home}/pic.png` });
    expect(image).toMatchObject({
      ok: true,
      content: [{ type: 'image', mediaType: 'image/png', dataBase64: png(4, 3).toString('base64') }],
    });
    expect(text(await call(karotte, 'view_image_file', { file_path: `${home}/wide.png` }))).toMatch(
      /^Image is too large \(2001x1 pixels\)/,
    );
    expect(text(await call(karotte, 'view_image_file', { file_path: `${home}/notes.txt` }))).toBe(
      `Cannot view ${home}/notes.txt: it is application/octet-stream, not a JPEG, PNG, GIF or WebP image`,
    );
    await sh('truncate -s 6M big.png');
    expect(text(await call(karotte, 'view_image_file', { file_path: `${home}/big.png` }))).toBe(
      `Image is too large: ${home}/big.png is 6291456 bytes; the limit is 5242880 bytes`,
    );
  });
});

describe('anthropic profile', () => {
  const editor = (args: Record<string, unknown>): Promise<ToolRunResult> =>
    call(anthropic, 'str_replace_based_edit_tool', args);

  it('view shows a file like cat -n, a range, and a directory two levels deep without hidden names', async () => {
    expect(text(await editor({ command: 'view', path: `${home}/notes.txt` }))).toBe(
      `Here's the result of running \`cat -n\` on ${home}/notes.txt:\n     1\talpha\n     2\tbeta\n     3\tgamma`,
    );
    expect(text(await editor({ command: 'view', path: `${home}/notes.txt`, view_range: [2, -1] }))).toBe(
      `Here's the result of running \`cat -n\` on ${home}/notes.txt:\n     2\tbeta\n     3\tgamma`,
    );
    await sh('touch somedir/inner/deep.txt somedir/.secret somedir/visible.txt');
    const listing = text(await editor({ command: 'view', path: `${home}/somedir` }));
    expect(listing).toBe(
      `Here are the files and directories up to 2 levels deep in ${home}/somedir, excluding hidden items:\n${home}/somedir\n${home}/somedir/inner/\n${home}/somedir/inner/deep.txt\n${home}/somedir/visible.txt`,
    );
    // max_characters (2000 here) cuts a long view and says so.
    const clipped = text(await editor({ command: 'view', path: `${home}/long-line.txt` }));
    expect(clipped.length).toBeLessThan(2300);
    expect(clipped).toContain('<response clipped>');
  });

  it('create, str_replace (exactly one match) and insert, each answered with a snippet', async () => {
    expect(
      text(
        await editor({ command: 'create', path: `${home}/new/made.py`, file_text: 'a = 1\nb = 2\na = 1\n' }),
      ),
    ).toBe(`File created successfully at: ${home}/new/made.py`);
    expect(text(await editor({ command: 'create', path: `${home}/new/made.py`, file_text: 'x' }))).toBe(
      `File already exists at: ${home}/new/made.py. Cannot overwrite files using command \`create\`.`,
    );
    expect(
      text(
        await editor({
          command: 'str_replace',
          path: `${home}/new/made.py`,
          old_str: 'a = 1',
          new_str: 'a = 3',
        }),
      ),
    ).toBe(
      'No replacement was performed. Multiple occurrences of old_str `a = 1` in lines [1,3]. Please ensure it is unique.',
    );
    expect(
      text(await editor({ command: 'str_replace', path: `${home}/new/made.py`, old_str: 'c = 3' })),
    ).toBe(`No replacement was performed, old_str \`c = 3\` did not appear verbatim in ${home}/new/made.py.`);
    const replaced = await editor({
      command: 'str_replace',
      path: `${home}/new/made.py`,
      old_str: 'b = 2',
      new_str: 'b = 20',
    });
    expect(text(replaced)).toContain('     2\tb = 20');
    expect(await cat('new/made.py')).toBe('a = 1\nb = 20\na = 1\n');
    const inserted = await editor({
      command: 'insert',
      path: `${home}/new/made.py`,
      insert_line: 1,
      insert_text: '# after one',
    });
    expect(inserted.ok).toBe(true);
    expect(await cat('new/made.py')).toBe('a = 1\n# after one\nb = 20\na = 1\n');
    // The older schema's new_str works for insert too; insert_line 0 is the start.
    await editor({
      command: 'insert',
      path: `${home}/new/made.py`,
      insert_line: 0,
      new_str: '#!/usr/bin/env python3\n',
    });
    expect((await cat('new/made.py')).split('\n')[0]).toBe('#!/usr/bin/env python3');
    expect(
      text(
        await editor({ command: 'insert', path: `${home}/new/made.py`, insert_line: 99, insert_text: 'x' }),
      ),
    ).toBe('Invalid `insert_line` parameter: 99. It should be within the range of lines of the file: [0, 5]');
  });

  it('bash restart gives a new shell with the files kept', async () => {
    await call(anthropic, 'bash', { command: 'export KAROTTE_BEFORE=1; echo kept > kept.txt' });
    const restarted = await call(anthropic, 'bash', { restart: true });
    expect(restarted).toMatchObject({ ok: true, note: 'the shell was restarted' });
    expect(text(restarted)).toBe('tool has been restarted.');
    const after = await call(anthropic, 'bash', { command: 'echo "[${KAROTTE_BEFORE:-}]"; cat kept.txt' });
    expect(after.shell?.stdout).toBe('[]\nkept\n');
  });
});

describe('openai profile', () => {
  it('shell runs each command in order with its own outcome, timeout and output cap', async () => {
    const result = await call(openai, 'shell', {
      // The shell persists between commands: the second runs in somedir too.
      commands: [
        'cd somedir && pwd',
        'pwd; echo err >&2; sh -c "exit 3"',
        'sleep 20',
        'cd ~; printf 0123456789',
      ],
      timeout_ms: 700,
      max_output_length: 4,
    });
    expect(result.ok).toBe(false);
    expect(JSON.parse(text(result))).toEqual({
      output: [
        {
          stdout: `${home.slice(0, 4)}\n[... ${home.length + '/somedir\n'.length - 4} more characters not shown]`,
          stderr: '',
          outcome: { type: 'exit', exit_code: 0 },
        },
        {
          stdout: `${home.slice(0, 4)}\n[... ${home.length + '/somedir\n'.length - 4} more characters not shown]`,
          stderr: 'err\n',
          outcome: { type: 'exit', exit_code: 3 },
        },
        expect.objectContaining({ outcome: { type: 'timeout' } }),
        {
          stdout: '0123\n[... 6 more characters not shown]',
          stderr: '',
          outcome: { type: 'exit', exit_code: 0 },
        },
      ],
      max_output_length: 4,
    });
  });

  it('apply_patch adds, updates, moves and deletes as the student', async () => {
    await sh('printf \'def greet():\\n    print("Hi")\\n\' > app.py; echo bye > obsolete.txt');
    const result = await call(openai, 'apply_patch', {
      input: [
        '*** Begin Patch',
        '*** Add File: added/hello.txt',
        '+Hello world',
        '*** Update File: app.py',
        '*** Move to: src/main.py',
        '@@ def greet():',
        '-    print("Hi")',
        '+    print("Hello, world!")',
        '*** Delete File: obsolete.txt',
        '*** End Patch',
      ].join('\n'),
    });
    expect(text(result)).toBe(
      'Success. Updated the following files:\nA added/hello.txt\nM app.py -> src/main.py\nD obsolete.txt',
    );
    expect(await cat('added/hello.txt')).toBe('Hello world\n');
    expect(await cat('src/main.py')).toBe('def greet():\n    print("Hello, world!")\n');
    const left = await sh(
      'test -e app.py || echo app.py gone; test -e obsolete.txt || echo obsolete.txt gone; stat -c %u added/hello.txt src/main.py',
    );
    expect(left.stdout).toBe(`app.py gone\nobsolete.txt gone\n${world.uid}\n${world.uid}\n`);
  });

  it('a hunk that does not fit changes nothing, not even the files before it', async () => {
    await sh('echo original > first.txt');
    const result = await call(openai, 'apply_patch', {
      input: [
        '*** Begin Patch',
        '*** Update File: first.txt',
        '-original',
        '+changed',
        '*** Update File: notes.txt',
        '-not in the file',
        '+x',
        '*** End Patch',
      ].join('\n'),
    });
    expect(result.ok).toBe(false);
    expect(text(result)).toBe(
      'apply_patch failed: hunk 1: cannot find these lines in notes.txt:\n  not in the file; nothing was changed',
    );
    expect(await cat('first.txt')).toBe('original\n');
  });
});

/** One file tool call per profile for a path, with the arguments each tool takes. */
const fileCalls = (target: string): [string, ToolProfile, string, Record<string, unknown>][] => [
  ['view_lines_in_file', karotte, 'view_lines_in_file', { file_path: target, from_line: 1, to_line: 5 }],
  ['replace_in_file', karotte, 'replace_in_file', { file_path: target, old: 'a', new: 'b' }],
  ['view_image_file', karotte, 'view_image_file', { file_path: target }],
  ['editor view', anthropic, 'str_replace_based_edit_tool', { command: 'view', path: target }],
  [
    'editor str_replace',
    anthropic,
    'str_replace_based_edit_tool',
    { command: 'str_replace', path: target, old_str: 'a', new_str: 'b' },
  ],
  [
    'editor insert',
    anthropic,
    'str_replace_based_edit_tool',
    { command: 'insert', path: target, insert_line: 0, insert_text: 'x' },
  ],
  [
    'editor create',
    anthropic,
    'str_replace_based_edit_tool',
    { command: 'create', path: target, file_text: 'x' },
  ],
  [
    'apply_patch update',
    openai,
    'apply_patch',
    { input: `*** Begin Patch\n*** Update File: ${target}\n@@\n+x\n*** End Patch` },
  ],
  [
    'apply_patch add',
    openai,
    'apply_patch',
    { input: `*** Begin Patch\n*** Add File: ${target}\n+x\n*** End Patch` },
  ],
];

describe('hostile files through every file tool', () => {
  const hostile: [string, string, RegExp][] = [
    ['a FIFO', 'pipe', /Not a regular file|already exists|No such/],
    ['/dev/zero', '/dev/zero', /Not a regular file|already exists|Permission denied/],
    ['a link to /dev/zero', 'zero', /Not a regular file|already exists/],
    [
      'a sparse 20 GiB file',
      'sparse.bin',
      /Not a UTF-8 text file|too large|not a JPEG|already exists|larger than/,
    ],
    [
      'a 3 GiB single line',
      'giant-line.txt',
      /Not a UTF-8 text file|too large|not a JPEG|already exists|larger than/,
    ],
    ['a link into the hidden task data', 'hidden-link', /File not found|already exists|Permission denied/],
    ['a link to the grader script', 'grader-link', /File not found|already exists|Permission denied/],
    ['a link to a root-only file', 'root-only-link', /Permission denied|already exists/],
    ['a link to /etc/shadow', 'shadow-link', /Permission denied|already exists/],
    [
      'a link to /root',
      'root-link',
      /is a directory|Permission denied|File not found|already exists|Not a regular file/,
    ],
    ['invalid UTF-8', 'latin1.txt', /Not a UTF-8 text file|not a JPEG|already exists/],
    ['a directory', 'somedir', /is a directory|already exists|Not a regular file/],
  ];
  for (const [what, file, expected] of hostile) {
    it(`${what}: a clear error from each tool, at once, the secret never shown`, async () => {
      const target = file.startsWith('/') ? file : `${home}/${file}`;
      for (const [tool, profile, name, args] of fileCalls(target)) {
        // The editor's view of a directory lists it: the one call here that is not an error.
        if (file === 'somedir' && tool === 'editor view') continue;
        const started = performance.now();
        const result = await call(profile, name, args);
        const elapsed = performance.now() - started;
        const shown = text(result);
        expect(shown).not.toContain(SECRET);
        expect(elapsed, `${tool} on ${what}`).toBeLessThan(HOSTILE_BOUND_MS);
        if (file === 'root-link' && tool === 'editor view' && result.ok) {
          // /root as the student sees it (covered by the host view): an empty listing at most.
          expect(shown.split('\n').slice(1)).toEqual([target]);
          continue;
        }
        expect(result.ok, `${tool} on ${what}: ${shown}`).toBe(false);
        expect(shown, `${tool} on ${what}`).toMatch(expected);
      }
    }, 120_000);
  }

  it('a NUL in the path is refused by every file tool before anything runs', async () => {
    for (const [tool, profile, name, args] of fileCalls(`${home}/notes.txt\0../x`)) {
      const result = await call(profile, name, args);
      expect(result.ok, tool).toBe(false);
      expect(text(result), tool).toMatch(/NUL/);
    }
  });

  it('none of it changed a file the student could not write', async () => {
    expect(fs.readFileSync(path.join(visibleDir, 'root-only.txt'), 'utf8')).toBe(`${SECRET}\n`);
    expect(fs.readFileSync(path.join(taskDir, 'hidden', 'answer.txt'), 'utf8')).toBe(`${SECRET}\n`);
    expect(fs.statSync('/etc/shadow').uid).toBe(0);
    // The links are still links: nothing was written through them, nor over them.
    const links = await sh('stat -c %F hidden-link root-only-link shadow-link zero');
    expect(links.stdout).toBe('symbolic link\nsymbolic link\nsymbolic link\nsymbolic link\n');
  });

  it('the directory view of a hidden directory shows nothing of it', async () => {
    const listing = await call(anthropic, 'str_replace_based_edit_tool', {
      command: 'view',
      path: `${taskDir}/hidden`,
    });
    expect(listing.ok).toBe(false);
    expect(text(listing)).not.toContain('answer.txt');
  });
});

describe('time bounds and cancellation', () => {
  it('a file operation past its bound is stopped and answered as timed out', async () => {
    const started = performance.now();
    const result = await karotte.call(
      {
        id: 'slow',
        name: 'view_lines_in_file',
        arguments: { file_path: `${home}/notes.txt`, from_line: 1, to_line: 3 },
      },
      { world, commandTimeoutMs: 5, abortSignal: abort.signal },
    );
    expect(result.ok).toBe(false);
    expect(text(result)).toBe(`Timed out on ${home}/notes.txt: the file operation took longer than 5 ms`);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('a cancelled episode stops a file operation under way', async () => {
    const controller = new AbortController();
    setTimeout(() => {
      controller.abort();
    }, 5);
    const result = await anthropic.call(
      {
        id: 'cancel',
        name: 'str_replace_based_edit_tool',
        arguments: { command: 'view', path: `${home}/notes.txt` },
      },
      { world, commandTimeoutMs: 20_000, abortSignal: controller.signal },
    );
    expect(result.ok).toBe(false);
    expect(text(result)).toBe(`The operation on ${home}/notes.txt was cancelled`);
    // The shell is still there for the next call.
    expect((await call(karotte, 'bash', { command: 'echo still here' })).shell?.stdout).toBe('still here\n');
  });
});
