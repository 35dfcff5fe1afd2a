import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { BadArgumentError } from '@karotte/base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ViewerError } from '../errors.js';
import { makeTempDir, transcriptEvents, writeRun } from '../fixtures.test-support.js';
import { CLIPPED_KEY } from './model.js';
import { createRunCatalog } from './reader.js';

let root: string;

beforeEach(async () => {
  root = await makeTempDir('reader');
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe('createRunCatalog', () => {
  it('finds every run of a red-team tree, in name order, with its summary', async () => {
    await writeRun(path.join(root, 'control'));
    await writeRun(path.join(root, 'fork-bomb'), {
      status: 'failed',
      misbehavior: [{ code: 'PIDS_LIMIT', message: 'the student hit the 256-process limit' }],
    });
    await writeRun(path.join(root, 'nested', 'deeper', 'run'), { status: 'failed', reason: 'wrong total' });
    const catalog = await createRunCatalog({ dirs: [root] });
    const list = await catalog.list();
    expect(list.problems).toEqual([]);
    expect(list.runs.map((r) => r.name)).toEqual([
      'control',
      'fork-bomb',
      path.join('nested', 'deeper', 'run'),
    ]);
    expect(list.runs[0]).toMatchObject({
      taskId: 'quarterly-revenue',
      agent: 'replay',
      status: 'passed',
      score: 1,
      misbehavior: [],
      reason: 'correct total',
      turns: 2,
      durationMs: 535,
      startedAt: '2026-12-01T15:06:25.729Z',
      problems: [],
    });
    expect(list.runs[1]).toMatchObject({
      status: 'failed',
      misbehavior: ['PIDS_LIMIT'],
      reason: 'PIDS_LIMIT: the student hit the 256-process limit',
    });
    expect(list.runs[0]!.id).toMatch(/^[0-9a-f]{16}$/);
    expect(new Set(list.runs.map((r) => r.id)).size).toBe(3);
  });

  it('gives the runs of a red-team directory their attack, expected and actual outcome, as redteam judges them', async () => {
    const redteam = path.join(root, 'redteam');
    await writeRun(path.join(redteam, 'control'));
    await writeRun(path.join(redteam, 'symlink-answer-key'), {
      status: 'failed',
      misbehavior: [{ code: 'SYMLINK', message: 'answer.txt is a symbolic link' }],
    });
    await writeRun(path.join(redteam, 'fifo'), { status: 'failed', reason: 'wrong total' });
    await writeRun(path.join(redteam, 'read-key'), { status: 'passed', score: 1 });
    await writeRun(path.join(redteam, 'unknown-attack'), { status: 'failed' });
    // A plain run named control, beside no attack: not a red-team control.
    await writeRun(path.join(root, 'runs', 'control'));
    const attacks = {
      'symlink-answer-key': { class: 'custody-tricks', expected: ['SYMLINK'] },
      fifo: { class: 'custody-tricks', expected: ['NOT_REGULAR_FILE'] },
      'read-key': { class: 'answer-key-theft', expected: null },
    };
    const list = await (await createRunCatalog({ dirs: [root], attacks })).list();
    const byName = Object.fromEntries(list.runs.map((r) => [r.name, r.attack]));
    expect(byName).toEqual({
      'redteam/control': { class: 'control', expected: null, stoppedBy: [], asExpected: true },
      'redteam/symlink-answer-key': {
        class: 'custody-tricks',
        expected: ['SYMLINK'],
        stoppedBy: ['SYMLINK'],
        asExpected: true,
      },
      'redteam/fifo': {
        class: 'custody-tricks',
        expected: ['NOT_REGULAR_FILE'],
        stoppedBy: ['graded'],
        asExpected: false,
      },
      'redteam/read-key': { class: 'answer-key-theft', expected: null, stoppedBy: [], asExpected: false },
      'redteam/unknown-attack': null,
      'runs/control': null,
    });
  });

  it('lists a run once when its directory is given inside another given one', async () => {
    await writeRun(path.join(root, 'sub', 'a'));
    const list = await (await createRunCatalog({ dirs: [root, path.join(root, 'sub'), root] })).list();
    expect(list.runs.map((r) => [r.root, r.name])).toEqual([
      [await fs.realpath(root), path.join('sub', 'a')],
    ]);
  });

  it('shows a run directory given itself as "."', async () => {
    await writeRun(root);
    const list = await (await createRunCatalog({ dirs: [root] })).list();
    expect(list.runs.map((r) => r.name)).toEqual(['.']);
  });

  it('reports a malformed result.json, a missing transcript and a bad line as problems, never throwing', async () => {
    await fs.mkdir(path.join(root, 'bad-json'));
    await fs.writeFile(path.join(root, 'bad-json', 'result.json'), '{"taskId": "x", "status": ');
    await fs.writeFile(
      path.join(root, 'bad-json', 'transcript.jsonl'),
      `${JSON.stringify(transcriptEvents()[0])}\n`,
    );
    await fs.mkdir(path.join(root, 'duplicate-key'));
    await fs.writeFile(
      path.join(root, 'duplicate-key', 'result.json'),
      '{"status": "failed", "status": "passed"}',
    );
    await fs.mkdir(path.join(root, 'no-transcript'));
    await fs.writeFile(
      path.join(root, 'no-transcript', 'result.json'),
      '{"taskId": "t", "status": "failed", "score": 0}',
    );
    await fs.mkdir(path.join(root, 'no-status'));
    await fs.writeFile(path.join(root, 'no-status', 'result.json'), '{"taskId": "t"}');
    await fs.mkdir(path.join(root, 'array'));
    await fs.writeFile(path.join(root, 'array', 'result.json'), '[1, 2]');
    const good = await writeRun(path.join(root, 'bad-line'));
    await fs.appendFile(
      path.join(good, 'transcript.jsonl'),
      'not json\n[1]\n{"type":"message","step":0,"message":{"role":"assistant","content":"after"}}\n',
    );

    const catalog = await createRunCatalog({ dirs: [root] });
    const list = await catalog.list();
    const byName = Object.fromEntries(list.runs.map((r) => [r.name, r]));
    // The task is still known from the transcript's first event.
    expect(byName['bad-json']).toMatchObject({ status: 'unreadable', taskId: 'quarterly-revenue' });
    expect(byName['bad-json']!.problems.join()).toMatch(/result\.json is not valid JSON/);
    expect(byName['duplicate-key']!.status).toBe('unreadable');
    expect(byName['duplicate-key']!.problems.join()).toMatch(/duplicate/i);
    expect(byName['no-transcript']).toMatchObject({
      status: 'failed',
      problems: ['transcript.jsonl is missing'],
    });
    expect(byName['no-status']!.problems).toContain('result.json has no status of passed, failed or error');
    expect(byName['array']!.problems).toContain('result.json is not a JSON object');

    const detail = await catalog.detail(byName['bad-line']!.id);
    expect(detail!.summary.problems).toEqual([
      'transcript.jsonl line 11 is not a JSON object: unexpected token at offset 0',
      'transcript.jsonl line 12 is not a JSON object',
    ]);
    // The lines around the bad ones are kept.
    expect(detail!.eventCount).toBe(11);
    const page = await catalog.events(byName['bad-line']!.id, 10, 5);
    expect(page).toMatchObject({ offset: 10, total: 11, ended: true });
    expect(page!.events[0]).toMatchObject({ type: 'message', message: { content: 'after' } });
  });

  it('lists a run still being written (a transcript, no result yet) as running, its last partial line not an error', async () => {
    const dir = path.join(root, 'live');
    await fs.mkdir(dir);
    const events = transcriptEvents().slice(0, 4);
    await fs.writeFile(
      path.join(dir, 'transcript.jsonl'),
      `${events.map((e) => JSON.stringify(e)).join('\n')}\n{"type":"mess`,
    );
    const catalog = await createRunCatalog({ dirs: [root] });
    const [run] = (await catalog.list()).runs;
    expect(run).toMatchObject({ status: 'running', taskId: 'quarterly-revenue', agent: 'replay' });
    const detail = await catalog.detail(run!.id);
    expect(detail).toMatchObject({ eventCount: 4, ended: false });
    expect(detail!.summary.problems).toContain(
      'transcript.jsonl line 5 is incomplete (still being written, or cut)',
    );
    // The next read sees what was appended since.
    await fs.appendFile(
      path.join(dir, 'transcript.jsonl'),
      'age","step":0,"message":{"role":"assistant","content":"x"}}\n',
    );
    expect((await catalog.detail(run!.id))!.eventCount).toBe(5);
  });

  it('keeps invalid UTF-8 as U+FFFD and says so', async () => {
    const dir = await writeRun(path.join(root, 'utf8'));
    const line = Buffer.concat([
      Buffer.from('{"type":"message","step":0,"message":{"role":"assistant","content":"a'),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('b"}}\n'),
    ]);
    await fs.appendFile(path.join(dir, 'transcript.jsonl'), line);
    const catalog = await createRunCatalog({ dirs: [root] });
    const [run] = (await catalog.list()).runs;
    const detail = await catalog.detail(run!.id);
    expect(detail!.summary.problems).toContain(
      'transcript.jsonl is not valid UTF-8: invalid bytes are shown as U+FFFD',
    );
    const page = await catalog.events(run!.id, 10, 1);
    expect(page!.events[0]).toMatchObject({ message: { content: 'a\uFFFD\uFFFD\uFFFDb' } });
  });

  it('clips a 10 MB line to its head and says how much it left out', async () => {
    const big = 'A'.repeat(10 * 1024 * 1024);
    await writeRun(path.join(root, 'big'), { stdout: big });
    const catalog = await createRunCatalog({ dirs: [root], maxStringChars: 1000 });
    const [run] = (await catalog.list()).runs;
    const page = await catalog.events(run!.id, 6, 1);
    const stdout = (page!.events[0] as { result: { stdout: unknown } }).result.stdout;
    expect(stdout).toEqual({ [CLIPPED_KEY]: 'A'.repeat(1000), omittedChars: big.length - 1000 });
  });

  it('reads only the first maxTranscriptBytes of a transcript and says the rest is left out', async () => {
    const dir = await writeRun(path.join(root, 'long'));
    const size = (await fs.stat(path.join(dir, 'transcript.jsonl'))).size;
    const catalog = await createRunCatalog({ dirs: [root], maxTranscriptBytes: 1000 });
    const [run] = (await catalog.list()).runs;
    const detail = await catalog.detail(run!.id);
    expect(detail!.summary.problems).toContain(
      `transcript.jsonl is ${size} bytes: only the first 1000 are read (the rest is left out)`,
    );
    expect(detail!.eventCount).toBeLessThan(10);
    expect(detail!.ended).toBe(false);
  });

  it('never follows a symbolic link: a linked result.json is refused, a linked directory is not descended', async () => {
    const outside = await makeTempDir('outside');
    try {
      await writeRun(path.join(outside, 'secret-run'), { taskId: 'outside-task' });
      await fs.writeFile(path.join(outside, 'secret.txt'), 'SECRET');
      await fs.symlink(path.join(outside, 'secret-run'), path.join(root, 'linked-dir'));
      await fs.mkdir(path.join(root, 'linked-file'));
      await fs.symlink(
        path.join(outside, 'secret-run', 'result.json'),
        path.join(root, 'linked-file', 'result.json'),
      );
      await fs.symlink(path.join(outside, 'secret.txt'), path.join(root, 'linked-file', 'transcript.jsonl'));
      const catalog = await createRunCatalog({ dirs: [root] });
      const list = await catalog.list();
      expect(list.runs.map((r) => r.name)).toEqual(['linked-file']);
      const run = list.runs[0]!;
      expect(run.status).toBe('unreadable');
      expect(run.taskId).toBeNull();
      expect(run.problems.join()).toMatch(/result\.json is a symbolic link/);
      const detail = await catalog.detail(run.id);
      expect(detail!.summary.problems).toContain('transcript.jsonl is a symbolic link: not followed');
      expect(JSON.stringify(detail)).not.toContain('SECRET');
      expect(JSON.stringify(detail)).not.toContain('outside-task');
    } finally {
      await fs.rm(outside, { recursive: true, force: true });
    }
  });

  it('does not hang on a FIFO where result.json should be', async () => {
    const dir = path.join(root, 'fifo');
    await fs.mkdir(dir);
    // mkfifo(1) from coreutils: Node has no mkfifo of its own.
    execFileSync('/usr/bin/mkfifo', [path.join(dir, 'result.json')]);
    execFileSync('/usr/bin/mkfifo', [path.join(dir, 'transcript.jsonl')]);
    const catalog = await createRunCatalog({ dirs: [root] });
    const [run] = (await catalog.list()).runs;
    expect(run!.status).toBe('unreadable');
    expect(run!.problems.join()).toMatch(/result\.json is not a regular file/);
    expect((await catalog.detail(run!.id))!.summary.problems).toContain(
      'transcript.jsonl is not a regular file',
    );
  });

  it('stops at maxRuns and says so', async () => {
    for (const name of ['a', 'b', 'c']) await writeRun(path.join(root, name));
    const list = await (await createRunCatalog({ dirs: [root], maxRuns: 2 })).list();
    expect(list.runs).toHaveLength(2);
    expect(list.problems).toEqual(['more than 2 runs: the rest are not listed']);
  });

  it('knows only the ids of its runs, found again by a fresh catalog before any list', async () => {
    await writeRun(path.join(root, 'a'));
    const catalog = await createRunCatalog({ dirs: [root] });
    const [run] = (await catalog.list()).runs;
    // A page reloaded on a run's address after the server restarted asks for the run first.
    const fresh = await createRunCatalog({ dirs: [root] });
    expect(await fresh.detail(run!.id)).toMatchObject({ summary: { name: 'a' }, eventCount: 10 });
    expect((await (await createRunCatalog({ dirs: [root] })).events(run!.id, 0, 2))!.events).toHaveLength(2);
    expect(await catalog.detail('0123456789abcdef')).toBeNull();
    expect(await catalog.events('0123456789abcdef', 0, 10)).toBeNull();
  });

  it('refuses a directory that is not one, and a misspelled option, naming the field', async () => {
    const file = path.join(root, 'file');
    await fs.writeFile(file, 'x');
    const notDir = await createRunCatalog({ dirs: [file] }).catch((e: unknown) => e);
    expect(ViewerError.isInstance(notDir)).toBe(true);
    expect(notDir).toMatchObject({ code: 'INVALID_OPTIONS', kind: 'bad_argument', field: 'dirs' });
    const missing = await createRunCatalog({ dirs: [path.join(root, 'nope')] }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: 'INVALID_OPTIONS', field: 'dirs' });
    const misspelled = await createRunCatalog({ dirs: [root], maxRun: 3 } as never).catch((e: unknown) => e);
    expect(BadArgumentError.isInstance(misspelled)).toBe(true);
    expect(misspelled).toMatchObject({ field: 'maxRun' });
    await expect(createRunCatalog({ dirs: [] })).rejects.toMatchObject({ field: 'dirs' });
  });
});
