// Run directories for the viewer's tests, in the shape `karotte run --out` writes (the fields
// are copied from a real run of the quarterly-revenue example). The tests of the app make real
// runs with the real CLI as root; these let the reader, the server and the page be tested
// without root, and with content a real harness would escape or cap first (hostile markup,
// invalid UTF-8, a 10 MB line), to prove the viewer holds even when a file is hostile.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** The strings a hostile student plants: each must show literally and run nothing. */
export const HOSTILE = {
  script: '<script>window.__karotteInjected = "script"</script>',
  img: '<img src=x onerror="window.__karotteInjected = \'img\'">',
  closeScript: '</script><script>window.__karotteInjected = "close"</script>',
  comment: '<!--<script>window.__karotteInjected = "comment"</script>',
  ansi: '\u001b[31mred\u001b[0m \u001b]0;title\u0007',
  bidi: 'safe\u202Etxt.exe',
} as const;

/** One of every hostile string, on one line each. */
export const HOSTILE_TEXT = Object.values(HOSTILE).join('\n');

export interface FixtureRun {
  readonly taskId?: string;
  readonly status?: 'passed' | 'failed' | 'error';
  readonly score?: number;
  readonly misbehavior?: readonly { code: string; message: string; path?: string }[];
  readonly stdout?: string;
  readonly command?: string;
  readonly reason?: string;
  readonly durationMs?: number;
}

/** A result.json as the harness writes it (one step, its verdict and evidence). */
function resultJson(run: FixtureRun = {}): Record<string, unknown> {
  const status = run.status ?? 'passed';
  const score = run.score ?? (status === 'passed' ? 1 : 0);
  const misbehavior = run.misbehavior ?? [];
  return {
    taskId: run.taskId ?? 'quarterly-revenue',
    status,
    score,
    misbehavior,
    sandbox: { uid: 2000864229 },
    durationMs: run.durationMs ?? 535,
    startedAt: '2026-12-01T15:06:25.729Z',
    finishedAt: '2026-12-01T15:06:26.264Z',
    agent: 'replay',
    turns: 2,
    wallTimeExceeded: false,
    network: { checked: true, isolated: true, detail: 'loopback: 14 route lookups blocked as required' },
    steps: [
      {
        index: 0,
        verdict: {
          schemaVersion: 1,
          status,
          score,
          judgeScore: score,
          passThreshold: 1,
          misbehavior,
          graderFailure: null,
          error: null,
          limitHits: misbehavior.some((m) => m.code === 'PIDS_LIMIT')
            ? [
                {
                  scope: 'student',
                  limit: 'pids',
                  limitValue: 256,
                  observed: 256,
                  enforcement: 'prevented',
                  message: 'pids max ×1552 (pids.events:max)',
                },
              ]
            : [],
          student: { uid: 2000864229 },
          reap: {
            confirmed: true,
            mechanism: 'none-alive',
            killed: 0,
            survivors: [],
            durationMs: 19.4,
            record: { tier: 'confirmed' },
          },
          reclaim: { ok: true, durationMs: 18.5, record: null },
          custody: {
            dir: '/tmp/karotte-custody-x',
            entries: [{ path: 'answer.txt', type: 'file', bytes: 8, sha256: '6dbda14c' }],
            missing: [],
            totalBytes: 8,
            durationMs: 4.7,
            manifest: {
              version: 1,
              ok: true,
              entries: [
                {
                  path: 'answer.txt',
                  kind: 'file',
                  size: 8,
                  sha256: '6dbda14cce5a147710035138e02f06e1b2c6cbf82b80997bc2e607c61bd14efa',
                  type: { mime: 'text/plain', ext: null, text: true },
                },
              ],
              refusals: [],
              absent: [],
            },
          },
          network: {
            checked: true,
            isolated: true,
            detail: 'loopback: 14 route lookups blocked as required',
          },
          confinement: {
            level: 'sandbox',
            namespaces: ['pid', 'mount', 'net'],
            memory: 'prevented',
            pids: 'prevented',
            wallTime: 'prevented',
            networkIsolated: true,
          },
          judge: {
            name: 'executable:grade.mjs',
            kind: 'executable',
            status: 'scored',
            score,
            metadata: {
              answered: true,
              reason: run.reason ?? (status === 'passed' ? 'correct total' : 'wrong total'),
            },
            failure: null,
            timings: { setupMs: 111.5, runMs: 78.4, teardownMs: 11.4 },
          },
          timings: { reapMs: 19.4, reclaimMs: 18.5, custodyMs: 4.7, judgeMs: 201.7, totalMs: 244.7 },
        },
      },
    ],
    error: null,
  };
}

/** transcript.jsonl events as the harness writes them: one tool call and its result. */
export function transcriptEvents(run: FixtureRun = {}): Record<string, unknown>[] {
  const command = run.command ?? 'cat answer.txt';
  const call = {
    id: 'call_0',
    type: 'function',
    function: { name: 'bash', arguments: JSON.stringify({ command }) },
  };
  const events: Record<string, unknown>[] = [
    {
      type: 'episode_started',
      taskId: run.taskId ?? 'quarterly-revenue',
      steps: 1,
      agent: 'replay',
      limits: {
        memoryBytes: 536870912,
        pids: 256,
        diskBytes: 67108864,
        wallTimeMs: 300000,
        commandTimeoutMs: 30000,
      },
      tools: 'bash',
    },
    {
      type: 'network_checked',
      uid: 2000864229,
      network: { checked: true, isolated: true, detail: 'loopback: 14 route lookups blocked as required' },
    },
    { type: 'step_started', step: 0, submission: ['answer.txt'] },
    { type: 'message', step: 0, message: { role: 'user', content: 'Write the total to answer.txt.' } },
    { type: 'message', step: 0, message: { role: 'assistant', content: 'Let me look.', tool_calls: [call] } },
    { type: 'tool_call', step: 0, toolCall: call },
    {
      type: 'tool_result',
      step: 0,
      result: {
        toolCallId: 'call_0',
        name: 'bash',
        ok: true,
        stdout: run.stdout ?? '6334194\n',
        stderr: '',
        exitCode: 0,
        timedOut: false,
        truncated: false,
        stdoutBytes: 8,
        stderrBytes: 0,
        durationMs: 11,
      },
    },
    { type: 'message', step: 0, message: { role: 'assistant', content: 'Done.' } },
    {
      type: 'step_ended',
      step: 0,
      status: run.status ?? 'passed',
      score: run.score ?? 1,
      stopReason: 'no_tool_calls',
    },
    { type: 'episode_ended', status: run.status ?? 'passed', score: run.score ?? 1, durationMs: 535 },
  ];
  return events.map((e, seq) => ({ ...e, seq, time: '2026-12-01T15:06:25.733Z', elapsedMs: seq * 10 }));
}

/** Write a run directory (result.json and transcript.jsonl) at `dir`. */
export async function writeRun(dir: string, run: FixtureRun = {}): Promise<string> {
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(path.join(dir, 'result.json'), JSON.stringify(resultJson(run), null, 2));
  await fs.writeFile(
    path.join(dir, 'transcript.jsonl'),
    transcriptEvents(run)
      .map((e) => `${JSON.stringify(e)}\n`)
      .join(''),
  );
  return dir;
}

/** A fresh directory named for karotte, removed by the caller. */
export function makeTempDir(label: string): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), `karotte-viewer-${label}-`));
}
