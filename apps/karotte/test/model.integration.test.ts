// `karotte run --agent openai` as a user runs it (contract section 13): the built CLI against a
// real chat-completions server on loopback (@karotte/agents/testing), through the real openai
// SDK, in the real sandbox, graded by the real graders. Only the model is scripted.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { toolCallReply, textReply, type ScriptedModelServer } from '@karotte/agents/testing';
import { pidsOfUid } from '../../../test/support/index.js';
import {
  examples,
  policyServer,
  type PolicyServer,
  readRun,
  runCli,
  solver,
  type Policy,
} from './model-support.js';

const KEY_ENV = 'KAROTTE_CLI_TEST_MODEL_KEY';
const KEY = 'sk-karotte-cli-3f9c1e77a2b04d58';

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
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `karotte-model-${label}-`));
  made.push(dir);
  return dir;
}

async function serve(policy: Policy): Promise<PolicyServer> {
  const server = await policyServer(policy);
  servers.push(server);
  return server;
}

/** `karotte run --agent openai` of `task` against `server`, the key in KEY_ENV. */
function runModel(server: ScriptedModelServer, task: string, out: string, extra: readonly string[] = []) {
  return runCli(
    [
      'run',
      '--task',
      path.join(examples, task),
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
    ],
    { add: { [KEY_ENV]: KEY } },
  );
}

/** The tool names the transcript's calls used, in order. */
function toolsCalled(events: readonly Record<string, unknown>[]): string[] {
  return events
    .filter((e) => e['type'] === 'tool_call')
    .map((e) => (e['toolCall'] as { function: { name: string } }).function.name);
}

const PROFILE_TOOLS = {
  bash: ['bash'],
  karotte: ['bash', 'view_lines_in_file', 'replace_in_file', 'view_image_file'],
  anthropic: ['bash', 'str_replace_based_edit_tool'],
  openai: ['shell', 'apply_patch'],
} as const;

/** The file tools each profile's solver uses on each example (besides its shell). */
const FILE_TOOLS_USED: Record<keyof typeof PROFILE_TOOLS, Record<string, string[]>> = {
  bash: { 'quarterly-revenue': [], 'roman-numerals': [] },
  karotte: {
    'quarterly-revenue': ['view_lines_in_file'],
    'roman-numerals': ['view_lines_in_file', 'replace_in_file'],
  },
  anthropic: {
    'quarterly-revenue': ['str_replace_based_edit_tool'],
    'roman-numerals': ['str_replace_based_edit_tool'],
  },
  openai: { 'quarterly-revenue': [], 'roman-numerals': ['apply_patch'] },
};

describe('karotte run --agent openai (contract section 13)', () => {
  const cases = (['bash', 'karotte', 'anthropic', 'openai'] as const).flatMap((profile) =>
    (['quarterly-revenue', 'roman-numerals'] as const).map((task) => [profile, task] as const),
  );

  it.each(cases)(
    'with --tools %s, a scripted model solves %s (exit 0, passed, score 1)',
    async (profile, task) => {
      const server = await serve(solver(profile));
      const out = path.join(tmp(`${profile}-${task}`), 'out');
      // The default profile is the contract's: --tools bash given explicitly for one example only.
      const tools = profile === 'bash' && task === 'roman-numerals' ? [] : ['--tools', profile];
      const r = await runModel(server, task, out, tools);
      const { result, events } = readRun(out);
      const why = JSON.stringify({ stdout: r.stdout, stderr: r.stderr, steps: result['steps'] }).slice(
        0,
        3000,
      );
      expect(r.status, why).toBe(0);
      expect(result, why).toMatchObject({
        taskId: task,
        status: 'passed',
        score: 1,
        misbehavior: [],
        error: null,
      });
      expect(r.stdout).toMatch(
        new RegExp(`^${task}: passed score=1 \\(uid \\d+, .*\\) -> .*result\\.json\\n$`),
      );
      // The model was offered the profile's tools, and each of its file tools did its part.
      for (const request of server.requests) {
        const offered = ((request.body?.['tools'] ?? []) as { function: { name: string } }[]).map(
          (t) => t.function.name,
        );
        expect(offered).toEqual(PROFILE_TOOLS[profile]);
        expect(request.headers['authorization']).toBe(`Bearer ${KEY}`);
        expect(request.body?.['model']).toBe('scripted-model');
      }
      const called = toolsCalled(events);
      for (const tool of FILE_TOOLS_USED[profile][task]) expect(called).toContain(tool);
      const results = events.filter((e) => e['type'] === 'tool_result') as unknown as {
        result: { ok: boolean };
      }[];
      expect(results.map((e) => e.result.ok)).toEqual(called.map(() => true));
      expect(events.find((e) => e['type'] === 'episode_started')).toMatchObject({
        tools: profile,
        agent: 'openai',
      });
      expect(events.filter((e) => e['type'] === 'model_call').length).toBe(server.requests.length);
      // stderr is a pipe and no --progress: nothing on it.
      expect(r.stderr).toBe('');
      expect(pidsOfUid((result['sandbox'] as { uid: number }).uid)).toEqual([]);
    },
  );

  it('a wrong answer fails with score 0 and exit 0; --progress shows each turn and tool call', async () => {
    const server = await serve((view) =>
      view.turn === 0 ? toolCallReply('bash', { command: 'echo 12345 > answer.txt' }) : textReply('Done.'),
    );
    const out = path.join(tmp('wrong'), 'out');
    const r = await runModel(server, 'quarterly-revenue', out, ['--progress']);
    expect(r.status).toBe(0);
    expect(readRun(out).result).toMatchObject({ status: 'failed', score: 0, error: null, misbehavior: [] });
    expect(r.stdout).toContain('  why: the grader scored 0 (needs 1 to pass): wrong total');
    const progress = r.stderr.split('\n').filter(Boolean);
    expect(progress[0]).toMatch(/^\[sandbox\] ready: uid \d+ /);
    expect(progress[1]).toMatch(
      /^\[turn 1\] 1 tool call \(model \d+ ms, 100 in \/ 10 out tokens; elapsed [\d.]+ m?s\)$/,
    );
    expect(progress[2]).toBe('[call 1] $ echo 12345 > answer.txt');
    expect(progress[3]).toMatch(/^\[call 1\] exit 0 \(/);
    expect(progress[4]).toMatch(/^\[turn 2\] answered, no tool call \(/);
    expect(progress.at(-1)).toMatch(/^\[grade\] failed score=0 /);
  });

  it.each(['env', 'file'] as const)(
    'the API key (from --api-key-%s) reaches the endpoint only: not the student processes (their /proc/*/environ), any /proc/*/cmdline, `env` as the model runs it, or the transcript',
    async (source) => {
      const dir = tmp(`key-${source}`);
      const keyFile = path.join(dir, 'api-key');
      fs.writeFileSync(keyFile, `${KEY}\n`, { mode: 0o600 });
      const out = path.join(dir, 'out');
      // Seen from this test (root) while the student's shell is alive: the model is asked for
      // turn 2 only after its first command ran, and answers after looking.
      const seen: { studentPids: number[]; environs: string[]; cmdlinesWithKey: string[] } = {
        studentPids: [],
        environs: [],
        cmdlinesWithKey: [],
      };
      const look = (): void => {
        const uid = (
          fs
            .readFileSync(path.join(out, 'transcript.jsonl'), 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as Record<string, unknown>)
            .find((e) => e['type'] === 'network_checked') as { uid: number } | undefined
        )?.uid;
        if (uid === undefined) throw new Error('no sandbox yet');
        seen.studentPids = pidsOfUid(uid);
        for (const pid of seen.studentPids) {
          try {
            seen.environs.push(fs.readFileSync(`/proc/${pid}/environ`, 'utf8'));
          } catch {
            // gone meanwhile
          }
        }
        for (const name of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
          try {
            if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(KEY))
              seen.cmdlinesWithKey.push(name);
          } catch {
            // gone
          }
        }
      };
      const server = await serve((view) => {
        if (view.turn === 0) {
          return toolCallReply('bash', {
            command: [
              'env',
              'echo ---',
              "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | sort -u",
              'echo ---',
              "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '",
              'echo',
              `cat ${keyFile} 2>&1 | head -c 200`,
              'echo searched',
            ].join('; '),
          });
        }
        look();
        return textReply('Done.');
      });
      const keyFlag = source === 'env' ? ['--api-key-env', KEY_ENV] : ['--api-key-file', keyFile];
      const r = await runCli(
        [
          'run',
          '--task',
          path.join(examples, 'quarterly-revenue'),
          '--agent',
          'openai',
          '--model',
          'scripted-model',
          '--base-url',
          server.url,
          ...keyFlag,
          '--out',
          out,
        ],
        // With a key file the variable is not given at all.
        source === 'env' ? { add: { [KEY_ENV]: KEY } } : { drop: [KEY_ENV] },
      );
      expect(r.status, r.stderr).toBe(0);
      const { result, events, text } = readRun(out);
      expect(result['status']).toBe('failed');
      expect(server.requests.length).toBe(2);
      expect(server.requests.every((request) => request.headers['authorization'] === `Bearer ${KEY}`)).toBe(
        true,
      );
      // The look happened, with the student's processes alive (the check could have failed).
      expect(seen.studentPids.length).toBeGreaterThan(0);
      expect(seen.environs.length).toBeGreaterThan(0);
      for (const environ of seen.environs) {
        expect(environ).toContain('PATH=');
        expect(environ).not.toContain(KEY);
        expect(environ).not.toContain(KEY_ENV);
      }
      expect(seen.cmdlinesWithKey).toEqual([]);
      // What the student's own commands saw.
      const observed = events.find((e) => e['type'] === 'tool_result') as unknown as {
        result: { stdout: string };
      };
      expect(observed.result.stdout).toContain('PATH=');
      expect(observed.result.stdout).toContain('searched');
      expect(observed.result.stdout).not.toContain(KEY);
      expect(observed.result.stdout).not.toContain(KEY_ENV);
      // The transcript and the result never hold it; neither does anything the CLI printed.
      expect(text).not.toContain(KEY);
      expect(JSON.stringify(result)).not.toContain(KEY);
      expect(r.stdout + r.stderr).not.toContain(KEY);
    },
    180_000,
  );

  it('an endpoint that keeps answering 500 ends the run as error: exit 1, result.json with AGENT_FAILED and the status, nothing left', async () => {
    const server = await serve((view) =>
      view.turn === 0
        ? toolCallReply('bash', { command: 'sleep 300 & echo started' })
        : { status: 500, headers: { 'retry-after-ms': '1' } },
    );
    const out = path.join(tmp('down'), 'out');
    const r = await runModel(server, 'quarterly-revenue', out);
    expect(r.status).toBe(1);
    const { result, events } = readRun(out);
    expect(result).toMatchObject({
      status: 'error',
      score: 0,
      misbehavior: [],
      error: { code: 'AGENT_FAILED', httpStatus: 500 },
    });
    // The agent's own policy: 16 attempts for the second turn (the first answered at once).
    expect(server.requests.length).toBe(1 + 16);
    expect(events.filter((e) => e['type'] === 'model_retry').length).toBe(15);
    expect(r.stdout).toMatch(/^quarterly-revenue: error score=0 error=AGENT_FAILED: .*last HTTP status 500/);
    // The background sleep of the student is gone with the sandbox.
    expect(pidsOfUid((result['sandbox'] as { uid: number }).uid)).toEqual([]);
  });

  it('--tools works with the replay agent too: a replay of shell and apply_patch calls solves roman-numerals', async () => {
    const dir = tmp('replay-tools');
    // A file replaced whole: the old lines removed, the new ones added, in one hunk.
    const stub = fs.readFileSync(path.join(examples, 'roman-numerals', 'student', 'solution.mjs'), 'utf8');
    const patch = [
      '*** Begin Patch',
      '*** Update File: solution.mjs',
      ...stub
        .trimEnd()
        .split('\n')
        .map((line) => `-${line}`),
      ...[
        'export function toRoman(n) {',
        "  const table = [[1000, 'M'], [900, 'CM'], [500, 'D'], [400, 'CD'], [100, 'C'], [90, 'XC'], [50, 'L'], [40, 'XL'], [10, 'X'], [9, 'IX'], [5, 'V'], [4, 'IV'], [1, 'I']];",
        "  let out = '';",
        '  for (const [value, symbol] of table) while (n >= value) { out += symbol; n -= value; }',
        '  return out;',
        '}',
      ].map((line) => `+${line}`),
      '*** End Patch',
    ].join('\n');
    const call = (id: string, name: string, args: unknown) => ({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
    });
    const replay = path.join(dir, 'replay.json');
    fs.writeFileSync(
      replay,
      JSON.stringify([
        call('c0', 'shell', { commands: ['cat solution.mjs'] }),
        call('c1', 'apply_patch', { input: patch }),
        { role: 'assistant', content: 'Done.' },
      ]),
    );
    const out = path.join(dir, 'out');
    const r = await runCli([
      'run',
      '--task',
      path.join(examples, 'roman-numerals'),
      '--agent',
      'replay',
      '--replay',
      replay,
      '--tools',
      'openai',
      '--out',
      out,
    ]);
    const { result, events } = readRun(out);
    const results = events.filter((e) => e['type'] === 'tool_result') as unknown as {
      result: { ok: boolean };
    }[];
    expect(r.status, r.stdout).toBe(0);
    expect(toolsCalled(events)).toEqual(['shell', 'apply_patch']);
    expect(results.map((e) => e.result.ok)).toEqual([true, true]);
    expect(result).toMatchObject({ status: 'passed', score: 1 });
  });
});
