// `karotte eval` (contract section 16) over both examples with a scripted model behind a real
// chat-completions server: the summary checked against what the model did, a kill mid-way and
// the resume that runs only what is missing, and --retry-errors.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { afterEach, describe, expect, it } from 'vitest';
import {
  textReply,
  toolCallReply,
  type ScriptedModelServer,
  type ScriptedReply,
} from '@karotte/agents/testing';
import { recoverLeftovers } from '@karotte/core';
import { DEFAULT_SANDBOX_STATE_DIR, listLeases } from '@karotte/sandbox';
import { pidsOfUid } from '../../../test/support/index.js';
import {
  controlCommands,
  examples,
  policyServer,
  type PolicyServer,
  readRun,
  runCli,
  startCli,
  type ModelView,
  type Policy,
} from './model-support.js';

const KEY_ENV = 'KAROTTE_EVAL_TEST_KEY';
const KEY = 'sk-karotte-eval-61c0d93e';

const made: string[] = [];
const servers: PolicyServer[] = [];
afterEach(async () => {
  const failures = servers.flatMap((server) => server.policyErrors);
  for (const server of servers.splice(0)) await server.close();
  // A test that failed between a kill and the resume leaves the killed harness's sandboxes.
  await recoverLeftovers();
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  // A scripted model that failed is a bug of the test, never a pass.
  expect(failures).toEqual([]);
});

function tmp(label: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `karotte-eval-${label}-`));
  made.push(dir);
  return dir;
}

async function serve(policy: Policy): Promise<PolicyServer> {
  const server = await policyServer(policy);
  servers.push(server);
  return server;
}

/** A tasks directory holding the two examples (as links: they stay inside the app's hidden directory). */
function suite(): string {
  const dir = tmp('suite');
  for (const name of ['quarterly-revenue', 'roman-numerals'])
    fs.symlinkSync(path.join(examples, name), path.join(dir, name));
  return dir;
}

function evalArgs(
  server: ScriptedModelServer,
  out: string,
  extra: readonly string[] = [],
  tasks = suite(),
): string[] {
  return [
    'eval',
    '--tasks',
    tasks,
    '--agent',
    'openai',
    '--model',
    'scripted-model',
    '--base-url',
    server.url,
    '--api-key-env',
    KEY_ENV,
    '--out',
    out,
    ...extra,
  ];
}

interface TaskReport {
  id: string;
  episodes: number;
  meanScore: number;
  passRate: number;
  errors: number;
  misbehavior: Record<string, number>;
  verdicts: number;
  passed: number;
  failed: number;
  passAtK: Record<string, number | null>;
  errorCodes: Record<string, number>;
  usage: { inputTokens: number; outputTokens: number; calls: number };
  runs: { episode: number; dir: string; status: string; score: number }[];
}
interface Report {
  tasks: TaskReport[];
  overall: Omit<TaskReport, 'id' | 'runs'>;
  ran: number;
  kept: number;
  redone: number;
  missing: number;
}

/** The variant an episode was given on its first turn (its first command says it). */
function variantOf(view: ModelView): number {
  const match = /variant-(\d+)/.exec(view.said);
  if (match === null) throw new Error('no variant in the conversation');
  return Number(match[1]);
}

const [LOOK, AWK] = controlCommands('quarterly-revenue');
const ROMAN = controlCommands('roman-numerals');
const QR_USAGE = { promptTokens: 200, completionTokens: 20 };
const ROMAN_USAGE = { promptTokens: 300, completionTokens: 30 };

/**
 * A model that behaves differently in each episode of a task, by the order its first turns
 * arrive (variant 0, 1, 2, …; each task has its own count), and says its variant in its first
 * command so its later turns (which may interleave with other episodes') know it:
 * - quarterly-revenue: variants 0-2 solve it (3 calls each), 3 writes a wrong total (2 calls);
 * - roman-numerals: variants 0-1 solve it (3 calls), 2 makes solution.mjs a symlink (SYMLINK,
 *   2 calls), 3 answers its first turn and then only 500s (16 attempts: AGENT_FAILED, error);
 *   4 and later solve it.
 */
function variedModel(): { policy: Policy; firstTurns: Record<string, number> } {
  const firstTurns: Record<string, number> = { 'quarterly-revenue': 0, 'roman-numerals': 0 };
  const policy: Policy = (view): ScriptedReply => {
    const usage = view.task === 'quarterly-revenue' ? QR_USAGE : ROMAN_USAGE;
    if (view.turn === 0) {
      const variant = firstTurns[view.task]!;
      firstTurns[view.task] = variant + 1;
      const first =
        view.task === 'quarterly-revenue'
          ? variant === 3
            ? 'echo 12345 > answer.txt'
            : LOOK!
          : variant === 2
            ? 'rm -f solution.mjs && ln -s /etc/hostname solution.mjs'
            : ROMAN[0]!;
      return toolCallReply('bash', { command: `echo variant-${variant}; ${first}` }, { usage });
    }
    const variant = variantOf(view);
    if (view.task === 'quarterly-revenue') {
      if (variant !== 3 && view.turn === 1) return toolCallReply('bash', { command: AWK! }, { usage });
      return textReply('Done.', { usage });
    }
    if (variant === 3) return { status: 500, headers: { 'retry-after-ms': '1' } };
    if (variant !== 2 && view.turn === 1) return toolCallReply('bash', { command: ROMAN[1]! }, { usage });
    return textReply('Done.', { usage });
  };
  return { policy, firstTurns };
}

describe('karotte eval (contract section 16)', () => {
  it('K = 4 over both examples: the summary is what the scripted model did; a second run runs nothing; --retry-errors reruns the error', async () => {
    const { policy, firstTurns } = variedModel();
    const server = await serve(policy);
    const out = path.join(tmp('summary'), 'out');
    const first = await runCli(evalArgs(server, out, ['--n', '4', '--concurrency', '2', '--json']), {
      add: { [KEY_ENV]: KEY },
    });
    // One episode ended in error (the endpoint kept failing): exit 1.
    expect(first.status, first.stderr).toBe(1);
    expect(first.stderr).toBe('');
    const report = JSON.parse(first.stdout) as Report;
    expect(firstTurns).toEqual({ 'quarterly-revenue': 4, 'roman-numerals': 4 });
    const [qr, roman] = report.tasks;
    // The contract's fields, then the rest.
    expect(qr).toMatchObject({
      id: 'quarterly-revenue',
      episodes: 4,
      meanScore: 0.75,
      passRate: 0.75,
      errors: 0,
      misbehavior: {},
      verdicts: 4,
      passed: 3,
      failed: 1,
      passAtK: { '1': 0.75, '2': 1, '4': 1 },
      errorCodes: {},
      // 3 solving episodes of 3 calls and a wrong one of 2, each call 200 in / 20 out.
      usage: { inputTokens: 11 * 200, outputTokens: 11 * 20, calls: 11 },
    });
    expect(roman).toMatchObject({
      id: 'roman-numerals',
      episodes: 4,
      // The error episode is reported apart: the mean is of the 3 verdicts, not of 4 with a 0.
      meanScore: 2 / 3,
      passRate: 2 / 3,
      errors: 1,
      misbehavior: { SYMLINK: 1 },
      verdicts: 3,
      passed: 2,
      failed: 1,
      // pass@2 of 3 verdicts with 2 passes: 1 - C(1,2)/C(3,2) = 1; pass@4 is undefined with 3.
      passAtK: { '1': 2 / 3, '2': 1, '4': null },
      errorCodes: { AGENT_FAILED: 1 },
      // 2 solving episodes of 3 calls, the symlink of 2, the error's 1 answered call.
      usage: { inputTokens: 9 * 300, outputTokens: 9 * 30, calls: 9 },
    });
    expect(report.overall).toMatchObject({
      episodes: 8,
      verdicts: 7,
      passed: 5,
      errors: 1,
      errorCodes: { AGENT_FAILED: 1 },
      misbehavior: { SYMLINK: 1 },
      usage: { inputTokens: 2200 + 2700, calls: 20 },
    });
    expect(report.overall.meanScore).toBeCloseTo((0.75 + 2 / 3) / 2, 12);
    expect(report.overall.passAtK).toEqual({ '1': (0.75 + 2 / 3) / 2, '2': 1, '4': 1 });
    expect(report).toMatchObject({ ran: 8, kept: 0, redone: 0, missing: 0 });
    // Requests: 11 + (2*3 + 2 + 1) answered, and the error episode's 16 failed attempts.
    expect(server.requests.length).toBe(11 + 9 + 16);
    // Every run in its own directory, with its result and transcript, as the summary says.
    for (const task of report.tasks) {
      expect(task.runs.map((r) => r.episode)).toEqual([0, 1, 2, 3]);
      for (const run of task.runs) {
        expect(run.dir).toBe(path.join(out, task.id, String(run.episode).padStart(3, '0')));
        const { result, events } = readRun(run.dir);
        expect(result).toMatchObject({ taskId: task.id, status: run.status, score: run.score });
        expect(events.at(-1)!['type']).toBe('episode_ended');
        expect(pidsOfUid((result['sandbox'] as { uid: number }).uid)).toEqual([]);
      }
    }
    const errored = roman!.runs.find((r) => r.status === 'error')!;
    expect(readRun(errored.dir).result['error']).toMatchObject({ code: 'AGENT_FAILED', httpStatus: 500 });
    expect(JSON.parse(fs.readFileSync(path.join(out, 'summary.json'), 'utf8'))).toMatchObject({ ran: 8 });
    for (const task of report.tasks)
      for (const run of task.runs) expect(readRun(run.dir).text).not.toContain(KEY);

    // Again with the same --out: every episode has a result, nothing runs; the human summary.
    const requests = server.requests.length;
    const again = await runCli(evalArgs(server, out, ['--n', '4']), { add: { [KEY_ENV]: KEY } });
    expect(again.status).toBe(1);
    expect(server.requests.length).toBe(requests);
    const lines = again.stdout.split('\n');
    expect(lines[0], again.stdout).toMatch(/^task +runs +passed +mean +pass@1 +pass@4 +errors +misbehavior$/);
    expect(
      lines.find((l) => l.startsWith('quarterly-revenue')),
      again.stdout,
    ).toMatch(/^quarterly-revenue +4 +3\/4 +0\.75 +0\.75 +1 +0 +-$/);
    expect(
      lines.find((l) => l.startsWith('roman-numerals')),
      again.stdout,
    ).toMatch(/^roman-numerals +4 +2\/3 +0\.667 +0\.667 +- +1 +SYMLINK×1$/);
    expect(
      lines.find((l) => l.startsWith('overall')),
      again.stdout,
    ).toMatch(/^overall +8 +5\/7 +0\.708 +0\.708 +1 +1 /);
    expect(again.stdout.replace(/\s+/g, ' ')).toContain(
      'ended in error (a fault of the host or the model endpoint, never counted as a score of 0): roman-numerals AGENT_FAILED×1.',
    );
    expect(again.stdout).toContain('Episodes: 0 run now, 8 kept from earlier runs.');
    expect(again.stdout).toContain('Tokens: 4900 in (0 cached), 490 out in 20 model call(s).');
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);

    // --retry-errors runs the error episode again (variant 4 solves it): now every episode has a verdict.
    const retried = await runCli(evalArgs(server, out, ['--n', '4', '--retry-errors', '--json']), {
      add: { [KEY_ENV]: KEY },
    });
    expect(retried.status).toBe(0);
    const after = JSON.parse(retried.stdout) as Report;
    expect(after).toMatchObject({ ran: 1, kept: 7, redone: 1, missing: 0 });
    expect(after.tasks[1]).toMatchObject({ episodes: 4, verdicts: 4, passed: 3, errors: 0, meanScore: 0.75 });
    expect(after.overall.errors).toBe(0);
  }, 600_000);

  it('SIGKILLed mid-way, it resumes: only the episodes without a result run, interrupted ones are redone (never counted), kept ones untouched', async () => {
    let firstTurns = 0;
    // Every episode solves its task, slowly (a second per command), so the kill lands mid-run.
    const server = await serve((view) => {
      if (view.turn === 0) firstTurns += 1;
      const commands = view.task === 'quarterly-revenue' ? [LOOK!, AWK!] : ROMAN;
      return view.turn < commands.length
        ? toolCallReply('bash', { command: `sleep 1; ${commands[view.turn]!}` })
        : textReply('Done.');
    });
    const out = path.join(tmp('resume'), 'out');
    const started = startCli(evalArgs(server, out, ['--n', '4', '--concurrency', '2']), {
      add: { [KEY_ENV]: KEY },
    });
    const resultDirs = (): string[] =>
      ['quarterly-revenue', 'roman-numerals'].flatMap((task) =>
        ['000', '001', '002', '003']
          .map((n) => path.join(out, task, n))
          .filter((dir) => fs.existsSync(path.join(dir, 'result.json'))),
      );
    const runDirs = (): string[] =>
      ['quarterly-revenue', 'roman-numerals'].flatMap((task) =>
        ['000', '001', '002', '003'].map((n) => path.join(out, task, n)).filter((dir) => fs.existsSync(dir)),
      );
    // Wait (bounded) until two episodes have results and another is running its commands.
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error('the eval never got two results with one more running');
      await new Promise((resolve) => setTimeout(resolve, 50));
      const running = runDirs().filter((dir) => {
        const transcript = path.join(dir, 'transcript.jsonl');
        if (fs.existsSync(path.join(dir, 'result.json')) || !fs.existsSync(transcript)) return false;
        const text = fs.readFileSync(transcript, 'utf8');
        return text.includes('"type":"tool_call"') && !text.includes('"type":"step_ended"');
      });
      if (resultDirs().length >= 2 && running.length > 0) break;
    }
    process.kill(started.pid, 'SIGKILL');
    const killed = await started.done;
    expect(killed.signal).toBe('SIGKILL');
    const done = resultDirs();
    const partial = runDirs().filter((dir) => !done.includes(dir));
    expect(done.length).toBeGreaterThanOrEqual(2);
    expect(done.length).toBeLessThan(8);
    expect(partial.length).toBeGreaterThan(0);
    // What the kill left: results kept as they are, and the killed episodes' sandboxes alive.
    const kept = new Map(done.map((dir) => [dir, fs.readFileSync(path.join(dir, 'result.json'), 'utf8')]));
    const inodes = new Map(done.map((dir) => [dir, fs.statSync(path.join(dir, 'result.json')).ino]));
    // An episode tears its sandbox down after its step ended and before its result exists: one
    // killed in that gap has no result and no lease. The orphans are those whose step was still
    // open.
    const orphanUids = partial.flatMap((dir) => {
      const text = fs.readFileSync(path.join(dir, 'transcript.jsonl'), 'utf8');
      const events = text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const event = events.find((e) => e['type'] === 'network_checked');
      if (event === undefined || events.some((e) => e['type'] === 'step_ended')) return [];
      return [event['uid'] as number];
    });
    expect(orphanUids.length).toBeGreaterThan(0);
    const leased = (uid: number): boolean =>
      listLeases(DEFAULT_SANDBOX_STATE_DIR).some((lease) => lease.uid === uid);
    // The killed harness could not tear its sandboxes down: their leases are still held.
    for (const uid of orphanUids) expect(leased(uid)).toBe(true);

    const before = firstTurns;
    const resumed = await runCli(evalArgs(server, out, ['--n', '4', '--concurrency', '2', '--json']), {
      add: { [KEY_ENV]: KEY },
    });
    expect(resumed.status, resumed.stderr).toBe(0);
    const report = JSON.parse(resumed.stdout) as Report;
    // Only the missing episodes ran: one first turn each.
    expect(report).toMatchObject({
      ran: 8 - done.length,
      kept: done.length,
      redone: partial.length,
      missing: 0,
    });
    expect(firstTurns - before).toBe(8 - done.length);
    expect(report.overall).toMatchObject({ episodes: 8, verdicts: 8, passed: 8, errors: 0, meanScore: 1 });
    for (const task of report.tasks) expect(task).toMatchObject({ episodes: 4, passed: 4, meanScore: 1 });
    for (const [dir, text] of kept) {
      expect(fs.readFileSync(path.join(dir, 'result.json'), 'utf8')).toBe(text);
      expect(fs.statSync(path.join(dir, 'result.json')).ino).toBe(inodes.get(dir));
    }
    // A redone episode's transcript is its own, whole: one start, one end, seq from 0.
    for (const dir of partial) {
      const { events, result } = readRun(dir);
      expect(result['status']).toBe('passed');
      expect(events.map((e) => e['seq'])).toEqual(events.map((_, i) => i));
      expect(events.filter((e) => e['type'] === 'episode_started')).toHaveLength(1);
      expect(events.at(-1)!['type']).toBe('episode_ended');
    }
    // The resume reclaimed the killed harness's sandboxes before it made its own.
    for (const uid of orphanUids) {
      expect(leased(uid)).toBe(false);
      expect(pidsOfUid(uid)).toEqual([]);
    }
  }, 600_000);
  it('SIGTERM stops the running episodes, removes them (they are no results) and prints the summary of what is done (exit 1)', async () => {
    const server = await serve((view) => {
      const commands = view.task === 'quarterly-revenue' ? [LOOK!, AWK!] : ROMAN;
      return view.turn < commands.length
        ? toolCallReply('bash', { command: `sleep 2; ${commands[view.turn]!}` })
        : textReply('Done.');
    });
    const out = path.join(tmp('sigterm'), 'out');
    const tasks = suite();
    const started = startCli(evalArgs(server, out, ['--n', '2', '--concurrency', '2', '--json'], tasks), {
      add: { [KEY_ENV]: KEY },
    });
    const transcripts = (): string[] =>
      ['quarterly-revenue', 'roman-numerals'].flatMap((task) =>
        ['000', '001']
          .map((n) => path.join(out, task, n, 'transcript.jsonl'))
          .filter(
            (file) => fs.existsSync(file) && fs.readFileSync(file, 'utf8').includes('"type":"tool_call"'),
          ),
      );
    const deadline = Date.now() + 120_000;
    while (transcripts().length < 2) {
      if (Date.now() > deadline) throw new Error('the eval never had two episodes running');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    process.kill(started.pid, 'SIGTERM');
    const stopped = await started.done;
    expect(stopped.status).toBe(1);
    expect(stopped.stderr).toContain('SIGTERM: stopping the running episodes');
    const report = JSON.parse(stopped.stdout) as Report;
    // The two running episodes were cut short: not results, and their directories are gone.
    expect(report.missing).toBe(4 - report.overall.episodes);
    expect(report.missing).toBeGreaterThanOrEqual(2);
    for (const task of report.tasks) for (const run of task.runs) expect(run.status).not.toBe('error');
    const left = ['quarterly-revenue', 'roman-numerals'].flatMap((task) =>
      ['000', '001'].map((n) => path.join(out, task, n)).filter((dir) => fs.existsSync(dir)),
    );
    for (const dir of left) expect(fs.existsSync(path.join(dir, 'result.json')), dir).toBe(true);
    // The resume runs the rest.
    const resumed = await runCli(evalArgs(server, out, ['--n', '2', '--concurrency', '2', '--json'], tasks), {
      add: { [KEY_ENV]: KEY },
    });
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      ran: report.missing,
      missing: 0,
      overall: { passed: 4 },
    });
  }, 600_000);

  it('--warm-pool: the episodes after the first start on pooled sandboxes, each fresh; the pool is drained at the end', async () => {
    const out = path.join(tmp('warm'), 'out');
    const replay = path.join(examples, 'quarterly-revenue', 'control.json');
    const run = await runCli([
      'eval',
      '--tasks',
      path.join(examples, 'quarterly-revenue'),
      '--agent',
      'replay',
      '--replay',
      replay,
      '--n',
      '3',
      '--warm-pool',
      '1',
      '--out',
      out,
      '--json',
    ]);
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ ran: 3, missing: 0, overall: { passed: 3 } });
    const uids = ['000', '001', '002'].map(
      (n) => (readRun(path.join(out, 'quarterly-revenue', n)).result['sandbox'] as { uid: number }).uid,
    );
    expect(new Set(uids).size).toBe(3);
    // Drained: no sandbox of the finished eval is left leased (its pooled spare included).
    expect(
      listLeases(DEFAULT_SANDBOX_STATE_DIR).filter((lease) => lease.record?.ownerPid === run.pid),
    ).toEqual([]);
    for (const uid of uids) expect(pidsOfUid(uid)).toEqual([]);
  }, 300_000);
});
