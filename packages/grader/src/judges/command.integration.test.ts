// Graders in any language: `command` (an argv) run as the grader's fresh uid in its sandbox,
// with a read-only copy of the task directory (without student/ and hidden/) as its working
// directory, on the host view and inside a task's image (a Debian image built here). The
// protocol is the same as for a JavaScript grader.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { importImage } from '@karotte/sandbox/image';
import { pidsOfUid } from '../../../../test/support/index.js';
import { testImage, testImageUnavailable } from '../../../../test/support/images.js';
import type { JudgeContext } from '../judge.js';
import { createExecutableJudge } from './executable.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true' || process.env['CI'] === '1';
const noImage = testImageUnavailable();
if (!isRoot) process.stderr.write('[karotte] command grader tests skipped: they need root\n');
else if (noImage !== undefined && !inCI)
  process.stderr.write(`[karotte] image grader tests skipped: ${noImage}\n`);

const GRADE_PY = `import json, os, sys
sub = os.environ["KAROTTE_SUBMISSION_DIR"]
hidden = os.environ["KAROTTE_HIDDEN_DIR"]
answer = open(os.path.join(sub, "answer.txt")).read().strip()
key = open(os.path.join(hidden, "key.txt")).read().strip()
try:
    open("written-by-grader", "w")
    cwd_writable = True
except OSError:
    cwd_writable = False
meta = {
    "cwd": sorted(os.listdir(".")),
    "cwdWritable": cwd_writable,
    "python": list(sys.version_info[:2]),
    "uid": os.getuid(),
    "workVisible": os.path.exists("/work"),
    "scoreFile": os.environ["KAROTTE_SCORE_FILE"],
}
with open(os.environ["KAROTTE_SCORE_FILE"], "w") as f:
    json.dump({"score": 1 if answer == key else 0, "metadata": meta}, f)
`;

let base = '';
let taskDir = '';
let submissionDir = '';
let hiddenDir = '';

beforeAll(() => {
  if (!isRoot) return;
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-command-grader-'));
  taskDir = path.join(base, 'task');
  fs.mkdirSync(path.join(taskDir, 'student'), { recursive: true });
  fs.mkdirSync(path.join(taskDir, 'hidden'));
  fs.writeFileSync(path.join(taskDir, 'grade.py'), GRADE_PY);
  fs.writeFileSync(path.join(taskDir, 'fail.sh'), '#!/bin/sh\necho failing on purpose >&2\nexit 3\n', {
    mode: 0o755,
  });
  fs.writeFileSync(path.join(taskDir, 'task.json'), '{}\n');
  fs.writeFileSync(path.join(taskDir, 'hidden', 'key.txt'), '42\n');
  fs.writeFileSync(path.join(taskDir, 'student', 'notes.txt'), 'student copy\n');
  submissionDir = path.join(base, 'submission');
  fs.mkdirSync(submissionDir);
  fs.writeFileSync(path.join(submissionDir, 'answer.txt'), '42\n');
  hiddenDir = path.join(taskDir, 'hidden');
});

afterAll(() => {
  if (base !== '') fs.rmSync(base, { recursive: true, force: true });
});

function context(): JudgeContext {
  return {
    submissionDir,
    hiddenDir,
    finalAnswer: null,
    abortSignal: new AbortController().signal,
    path: 'grader',
  };
}

const common = { timeoutMs: 60_000, memoryBytes: 512 * MiB } as const;

describe.skipIf(!isRoot)('a command grader on the host view', () => {
  it('runs python3 grade.py in a read-only copy of the task directory, without student/ and hidden/', async () => {
    const report = await createExecutableJudge({
      ...common,
      command: ['python3', 'grade.py'],
      taskDir,
    }).evaluate(context());
    expect(report.error).toBeNull();
    expect(report).toMatchObject({ status: 'scored', score: 1 });
    expect(report.metadata).toMatchObject({
      cwd: ['fail.sh', 'grade.py', 'task.json'],
      cwdWritable: false,
      uid: report.confinement.uid,
    });
    expect(report.confinement.uid).not.toBe(0);
    expect(pidsOfUid(report.confinement.uid!)).toEqual([]);
  });

  it('leaves out more top-level names when told (an image kept in the task directory)', async () => {
    fs.mkdirSync(path.join(taskDir, 'image'), { recursive: true });
    fs.writeFileSync(path.join(taskDir, 'image', 'oci-layout'), '{}');
    try {
      const report = await createExecutableJudge({
        ...common,
        command: ['python3', 'grade.py'],
        taskDir,
        taskDirExclude: ['image'],
      }).evaluate(context());
      expect(report).toMatchObject({ status: 'scored', score: 1 });
      expect(report.metadata).toMatchObject({ cwd: ['fail.sh', 'grade.py', 'task.json'] });
    } finally {
      fs.rmSync(path.join(taskDir, 'image'), { recursive: true, force: true });
    }
  });

  it('keeps the protocol: a non-zero exit fails, an untrusted name is refused', async () => {
    const failing = await createExecutableJudge({ ...common, command: ['./fail.sh'], taskDir }).evaluate(
      context(),
    );
    expect(failing.status).toBe('failed');
    expect(failing.failure?.reason).toBe('EXIT_CODE');
    expect(failing.failure?.stderrTail).toContain('failing on purpose');
    const unknown = await createExecutableJudge({
      ...common,
      command: ['karotte-no-such-grader'],
      taskDir,
    }).evaluate(context());
    expect(unknown.status).toBe('error');
    expect(unknown.error?.message).toMatch(/not a trusted binary/u);
    expect(() => createExecutableJudge({ command: ['python3'], program: '/x.mjs' })).toThrow(
      /exactly one of program and command/u,
    );
  });
});

describe.skipIf(!isRoot || (noImage !== undefined && !inCI))('a command grader in an image', () => {
  let rootfs = '';
  beforeAll(async () => {
    const imported = await importImage(await testImage('python'), { cacheDir: path.join(base, 'cache') });
    rootfs = imported.rootfs;
  }, 600_000);

  it("runs the image's python3 with the inputs at /karotte/*", async () => {
    const report = await createExecutableJudge({
      ...common,
      command: ['python3', 'grade.py'],
      taskDir,
      rootfs,
    }).evaluate(context());
    expect(report.error).toBeNull();
    expect(report).toMatchObject({ status: 'scored', score: 1 });
    expect(report.metadata).toMatchObject({
      cwd: ['fail.sh', 'grade.py', 'task.json'],
      cwdWritable: false,
      python: [3, 11],
      workVisible: false,
      scoreFile: '/karotte/out/score.json',
    });
    expect(pidsOfUid(report.confinement.uid!)).toEqual([]);
  });
});
