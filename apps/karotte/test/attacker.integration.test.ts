// `karotte redteam --attacker openai`: a scripted attacker (it looks for a leaked answer key and
// submits it) against the deliberately weakened fixture, where it must be reported as a finding
// (the proof the command can fail), and against both examples, where it must find nothing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { textReply, toolCallReply, type ScriptedModelServer } from '@karotte/agents/testing';
import { pidsOfUid } from '../../../test/support/index.js';
import {
  app,
  examples,
  policyServer,
  type PolicyServer,
  readRun,
  runCli,
  type Policy,
} from './model-support.js';

const KEY_ENV = 'KAROTTE_ATTACKER_TEST_KEY';
const weakened = path.join(app, 'test', 'fixtures', 'weakened-revenue');
const prompt = fs.readFileSync(path.join(app, 'src', 'redteam', 'attacker-prompt.txt'), 'utf8').trim();

const made: string[] = [];
const servers: PolicyServer[] = [];
afterEach(async () => {
  const failures = servers.flatMap((server) => server.policyErrors);
  for (const server of servers.splice(0)) await server.close();
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  // A scripted model that failed is a bug of the test, never a pass.
  expect(failures).toEqual([]);
});

function tmp(label: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `karotte-attacker-${label}-`));
  made.push(dir);
  return dir;
}

async function serve(policy: Policy): Promise<PolicyServer> {
  const server = await policyServer(policy);
  servers.push(server);
  return server;
}

/** The leak-taker: it searches the filesystem for an expected answer and submits what it finds as answer.txt. */
const leakTaker: Policy = (view) => {
  if (view.turn === 0)
    return toolCallReply('bash', {
      command: 'ls -la; find "$HOME" /tmp /var/tmp -iname "*expected*" -type f 2>/dev/null | head -20',
    });
  if (view.turn === 1) {
    return toolCallReply('bash', {
      command:
        'for f in $(find "$HOME" /tmp /var/tmp -iname "*expected*" -type f 2>/dev/null | head -20); do cat "$f" > answer.txt; done; cat answer.txt 2>/dev/null; true',
    });
  }
  return textReply('I found a cached expected answer and submitted it as answer.txt.');
};

interface Finding {
  episode: number;
  status: string;
  score: number;
  finding: boolean;
  reason: string;
  transcript: string;
  result: string;
  dir: string;
}
interface AttackerReport {
  task: string;
  attacker: { model: string; promptSha256: string };
  episodes: number;
  ok: boolean;
  findings: Finding[];
  runs: Finding[];
  out: string;
}

function attack(server: ScriptedModelServer, task: string, out: string, extra: readonly string[] = []) {
  return runCli(
    [
      'redteam',
      '--task',
      task,
      '--attacker',
      'openai',
      '--model',
      'scripted-attacker',
      '--base-url',
      server.url,
      '--api-key-env',
      KEY_ENV,
      '--out',
      out,
      ...extra,
    ],
    { add: { [KEY_ENV]: 'sk-karotte-attacker' } },
  );
}

describe('karotte redteam --attacker openai', () => {
  it('reports the leak the scripted attacker takes on weakened-revenue as a finding with its transcript (exit 1)', async () => {
    const server = await serve(leakTaker);
    const out = path.join(tmp('weakened'), 'out');
    const r = await attack(server, weakened, out, ['--episodes', '2', '--concurrency', '2', '--json']);
    expect(r.status, r.stderr).toBe(1);
    const report = JSON.parse(r.stdout) as AttackerReport;
    expect(report).toMatchObject({ task: 'weakened-revenue', episodes: 2, ok: false, out });
    expect(report.attacker.model).toBe('scripted-attacker');
    expect(report.findings.map((f) => f.episode)).toEqual([0, 1]);
    for (const finding of report.findings) {
      expect(finding).toMatchObject({ status: 'passed', score: 1, finding: true });
      expect(finding.transcript).toBe(path.join(finding.dir, 'transcript.jsonl'));
      const { result, events } = readRun(finding.dir);
      expect(result).toMatchObject({ taskId: 'weakened-revenue', status: 'passed', score: 1 });
      // The transcript shows how: the leaked key found in the student's files and submitted.
      const stdout = (
        events.filter((e) => e['type'] === 'tool_result') as unknown as { result: { stdout: string } }[]
      )
        .map((e) => e.result.stdout)
        .join('\n');
      expect(stdout).toContain('.cache/expected_total_cents.txt');
      expect(pidsOfUid((result['sandbox'] as { uid: number }).uid)).toEqual([]);
      const told = JSON.parse(fs.readFileSync(path.join(finding.dir, 'attacker.json'), 'utf8')) as {
        prompt: string;
      };
      expect(told.prompt).toBe(prompt);
    }
    // Every request told the model to cheat, in the one system message, after the episode's own.
    expect(server.requests.length).toBe(6);
    for (const request of server.requests) {
      const messages = request.body?.['messages'] as { role: string; content: string }[];
      expect(messages.filter((m) => m.role === 'system')).toHaveLength(1);
      expect(messages[0]!.role).toBe('system');
      expect(messages[0]!.content.startsWith('You are working in a Linux shell')).toBe(true);
      expect(messages[0]!.content.endsWith(`\n\n${prompt}`)).toBe(true);
    }
    // The table form names each finding's transcript.
    const human = await attack(await serve(leakTaker), weakened, path.join(tmp('weakened-human'), 'out'));
    expect(human.status).toBe(1);
    expect(human.stdout).toMatch(
      /^finding: episode 0 passed score=1: \/.*\/attacker-000\/transcript\.jsonl$/m,
    );
    expect(human.stdout).toMatch(
      /^weakened-revenue: 1 finding\(s\) in 1 attacker episode\(s\); results in /m,
    );
  });

  it.each(['quarterly-revenue', 'roman-numerals'])(
    'the same attacker finds nothing against %s (exit 0)',
    async (name) => {
      const server = await serve(leakTaker);
      const out = path.join(tmp(name), 'out');
      const r = await attack(server, path.join(examples, name), out, [
        '--episodes',
        '2',
        '--concurrency',
        '2',
        '--json',
      ]);
      expect(r.status, r.stdout).toBe(0);
      const report = JSON.parse(r.stdout) as AttackerReport;
      expect(report).toMatchObject({ task: name, ok: true, findings: [] });
      expect(report.runs.map((run) => [run.status, run.score, run.finding])).toEqual([
        ['failed', 0, false],
        ['failed', 0, false],
      ]);
      // It did try: its search ran, and found no key.
      const { events } = readRun(report.runs[0]!.dir);
      const calls = events.filter((e) => e['type'] === 'tool_call');
      expect(calls).toHaveLength(2);
      const stdout = (
        events.filter((e) => e['type'] === 'tool_result') as unknown as { result: { stdout: string } }[]
      )
        .map((e) => e.result.stdout)
        .join('\n');
      expect(stdout).not.toContain('expected');
    },
  );

  it('an attacker episode that ends in error is a finding too (here the endpoint fails; --agent-config bounds the retries)', async () => {
    const server = await serve(() => ({ status: 503 }));
    const dir = tmp('error');
    const config = path.join(dir, 'agent.json');
    fs.writeFileSync(config, JSON.stringify({ retry: { maxAttempts: 2, initialDelayMs: 1 } }));
    const r = await attack(server, path.join(examples, 'quarterly-revenue'), path.join(dir, 'out'), [
      '--agent-config',
      config,
      '--json',
    ]);
    expect(r.status).toBe(1);
    const report = JSON.parse(r.stdout) as AttackerReport;
    expect(report.findings).toHaveLength(1);
    expect(report.findings[0]).toMatchObject({ status: 'error', finding: true });
    expect(report.findings[0]!.reason).toContain('AGENT_FAILED');
    expect(server.requests.length).toBe(2);
  });
});
