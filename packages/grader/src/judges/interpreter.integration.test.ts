// The grader interpreter check on real files (root): copies of this Node.js in /tmp, in a
// hidden directory, in a directory a user owns, behind symlinks from root-owned directories.
// Each refusal is checked three ways: the check's data, the judge's preflight (what an
// episode runs before its sandbox exists) and a real evaluation (what it runs at the end).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, testUid } from '../../../../test/support/index.js';
import { preflightJudge } from '../judge.js';
import type { JudgeContext } from '../judge.js';
import { allOf } from './compose.js';
import { createExecutableJudge } from './executable.js';
import { checkGraderInterpreter } from './interpreter.js';
import { createRegexJudge } from './regex.js';

const program = path.join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'compare.mjs');

/** A root-owned directory (0755, every ancestor root-owned) holding everything below. */
let base: string;
/** A trusted copy of this Node.js, in `base`. */
let trusted: string;
let submission: { dir: string; cleanup: () => void };
let hidden: { dir: string; cleanup: () => void };

/** A copy of this Node.js at `file` (a hard link when on the same file system). */
function nodeAt(file: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
  try {
    fs.linkSync(trusted, file);
  } catch {
    fs.copyFileSync(process.execPath, file);
    fs.chmodSync(file, 0o755);
  }
  return file;
}

beforeAll(() => {
  fs.mkdirSync('/var/lib/karotte', { recursive: true, mode: 0o755 });
  base = fs.mkdtempSync('/var/lib/karotte/karotte-test-interp-');
  fs.chmodSync(base, 0o755);
  trusted = path.join(base, 'bin', 'node');
  fs.mkdirSync(path.dirname(trusted), { mode: 0o755 });
  fs.copyFileSync(process.execPath, trusted);
  fs.chmodSync(trusted, 0o755);
  submission = tempDir('interp-sub');
  hidden = tempDir('interp-hidden');
  fs.writeFileSync(path.join(submission.dir, 'answer.txt'), '42\n');
  fs.writeFileSync(path.join(hidden.dir, 'key.txt'), '42\n');
});
afterAll(() => {
  fs.rmSync(base, { recursive: true, force: true });
  submission.cleanup();
  hidden.cleanup();
});

function context(): JudgeContext {
  return {
    submissionDir: submission.dir,
    hiddenDir: hidden.dir,
    finalAnswer: null,
    abortSignal: new AbortController().signal,
    path: 'grader',
  };
}

/** Refused by the check, by the preflight and by a real evaluation, each with `reason`. */
async function expectRefused(interpreter: string, reason: string | RegExp): Promise<void> {
  const check = await checkGraderInterpreter({ interpreter });
  expect(check).toMatchObject({ ok: false, code: 'UNTRUSTED_INTERPRETER', interpreter });
  expect(check.reason).toMatch(reason);
  const judge = createExecutableJudge({ program, interpreter, timeoutMs: 20_000 });
  await expect(preflightJudge(judge)).rejects.toMatchObject({ code: 'UNTRUSTED_INTERPRETER' });
  const report = await judge.evaluate(context());
  expect(report).toMatchObject({ status: 'error', error: { code: 'UNTRUSTED_INTERPRETER' } });
  expect(report.error!.message).toMatch(reason);
}

describe('checkGraderInterpreter (real files, root)', () => {
  it("accepts this harness's own Node.js, and a root-owned link to a trusted copy", async () => {
    const own = await checkGraderInterpreter();
    expect(own).toMatchObject({ ok: true, code: null, interpreter: process.execPath });
    const link = path.join(base, 'venv', 'bin', 'node');
    fs.mkdirSync(path.dirname(link), { recursive: true, mode: 0o755 });
    fs.symlinkSync(trusted, link);
    expect(await checkGraderInterpreter({ interpreter: link })).toMatchObject({
      ok: true,
      resolved: trusted,
    });
    const judge = createExecutableJudge({ program, interpreter: link, timeoutMs: 20_000 });
    await expect(preflightJudge(judge)).resolves.toBeUndefined();
    expect(await judge.evaluate(context())).toMatchObject({ status: 'scored', score: 1 });
  });

  it('refuses a copy of Node.js under a mkdtemp directory in /tmp', async () => {
    const dir = tempDir('interp-tmp');
    try {
      const copy = path.join(dir.dir, 'node');
      fs.copyFileSync(process.execPath, copy);
      fs.chmodSync(copy, 0o755);
      await expectRefused(copy, /\/tmp is writable by group or others/);
      // As process isolation too: the rule is the interpreter's, not the sandbox's.
      expect(await checkGraderInterpreter({ interpreter: copy, isolation: 'process' })).toMatchObject({
        ok: false,
        code: 'UNTRUSTED_INTERPRETER',
      });
    } finally {
      dir.cleanup();
    }
  });

  it('refuses a link in a root-owned directory that points into a directory a user can write', async () => {
    const userDir = path.join(base, 'user-owned');
    fs.mkdirSync(userDir, { mode: 0o755 });
    const target = nodeAt(path.join(userDir, 'node'));
    fs.chownSync(userDir, testUid(), testUid());
    const link = path.join(base, 'opt-venv', 'bin', 'node');
    fs.mkdirSync(path.dirname(link), { recursive: true, mode: 0o755 });
    fs.symlinkSync(target, link);
    await expectRefused(link, new RegExp(`${userDir} is owned by uid \\d+, not root`));
  });

  it('refuses Node.js in a hidden directory (~/.nvm), directly and behind a link (a venv into ~/.pyenv)', async () => {
    const inHidden = nodeAt(path.join(base, 'home', '.nvm', 'versions', 'node', 'bin', 'node'));
    await expectRefused(inHidden, /hidden directory .*\/home\/\.nvm/);
    const pyenv = nodeAt(path.join(base, 'root', '.pyenv', 'versions', '3.12', 'bin', 'python3'));
    const venvLink = path.join(base, 'opt', 'venv', 'bin', 'python3');
    fs.mkdirSync(path.dirname(venvLink), { recursive: true, mode: 0o755 });
    fs.symlinkSync(pyenv, venvLink);
    await expectRefused(venvLink, /hidden directory .*\/root\/\.pyenv/);
  });

  it("refuses a link whose target the grader's uid cannot reach (the target is checked, not just the link)", async () => {
    const closed = path.join(base, 'closed');
    fs.mkdirSync(closed, { mode: 0o700 });
    const target = nodeAt(path.join(closed, 'node'));
    const link = path.join(base, 'open', 'node');
    fs.mkdirSync(path.dirname(link), { recursive: true, mode: 0o755 });
    fs.symlinkSync(target, link);
    await expectRefused(link, new RegExp(`${closed} is not searchable by others`));
    // Without a sandbox the harness's own uid runs it: reachable, so accepted.
    expect(await checkGraderInterpreter({ interpreter: link, isolation: 'process' })).toMatchObject({
      ok: true,
    });
  });

  it('reports a missing interpreter as GRADER_NOT_FOUND, and a composite preflights every child', async () => {
    const missing = path.join(base, 'no-such-node');
    expect(await checkGraderInterpreter({ interpreter: missing })).toMatchObject({
      ok: false,
      code: 'GRADER_NOT_FOUND',
      resolved: null,
    });
    const composite = allOf([
      createRegexJudge({ patterns: ['42'] }),
      createExecutableJudge({ program, interpreter: missing }),
    ]);
    await expect(preflightJudge(composite)).rejects.toMatchObject({ code: 'GRADER_NOT_FOUND' });
    await expect(
      preflightJudge(createExecutableJudge({ program: path.join(base, 'no-such-grader.mjs') })),
    ).rejects.toMatchObject({ code: 'GRADER_NOT_FOUND' });
  });

  it('refuses options that are not an absolute path', async () => {
    await expect(checkGraderInterpreter({ interpreter: 'node' })).rejects.toMatchObject({
      name: 'BadArgumentError',
    });
  });
});
