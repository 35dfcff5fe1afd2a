#!/usr/bin/env node
// The overhead one turn of @karotte/agents' OpenAI-compatible agent adds (the official SDK,
// the conversation turned into request messages, the answer parsed into a turn, the retry
// bookkeeping) against a bare `fetch` of the same request body to the same local server, run
// side by side, interleaved. Both talk to the scripted model server of
// `@karotte/agents/testing` on 127.0.0.1, which answers every request with the same tool call
// (and token ids, as vLLM's `return_token_ids` does). Medians and 90th percentiles per turn.
// A third leg adds what an episode records of each model turn: its `model_call` and
// `message` events appended to a transcript of @karotte/core on this disk (each fdatasync'ed
// before the append resolves, as in an episode), so "agent + transcript" is the whole
// overhead the issue bounds.
//
//   pnpm build && node bench/agents/turn-overhead.mjs [--turns N] [--messages M] [--dir D]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { createOpenAIAgent } from '../../packages/agents/dist/index.js';
import { Transcript } from '../../packages/core/dist/index.js';
import { createScriptedModelServer, toolCallReply } from '../../packages/agents/dist/testing/index.js';

const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : Number(process.argv[at + 1]) || fallback;
};
const dirAt = process.argv.indexOf('--dir');
// The transcript's directory: on the disk the episodes' runs go to (not a tmpfs).
const transcriptDir = fs.mkdtempSync(
  path.join(dirAt === -1 ? os.tmpdir() : process.argv[dirAt + 1], 'karotte-bench-transcript-'),
);
const turns = arg('--turns', 2000);
const messages = arg('--messages', 40);
const warmup = 200;

// A conversation of `messages` messages after system and user: tool calls and their ~1 KB results.
const conversation = [
  { role: 'system', content: 'You are working in a Linux shell as an unprivileged user.' },
  { role: 'user', content: 'Compute the third-quarter revenue and write it to answer.txt.' },
];
for (let i = 0; conversation.length < messages + 2; i += 1) {
  conversation.push({
    role: 'assistant',
    content: null,
    tool_calls: [
      {
        id: `call_${i}`,
        type: 'function',
        function: { name: 'bash', arguments: JSON.stringify({ command: `head -n ${i} orders.csv` }) },
      },
    ],
  });
  conversation.push({
    role: 'tool',
    tool_call_id: `call_${i}`,
    content: `${'x,'.repeat(500)}\n[exit code: 0]`,
  });
}
const tools = [
  {
    name: 'bash',
    description: 'Run a command in your persistent bash shell.',
    parameters: {
      type: 'object',
      properties: { command: { type: 'string' }, timeoutMs: { type: 'number' } },
      required: ['command'],
      additionalProperties: false,
    },
  },
];

const reply = toolCallReply(
  'bash',
  { command: "awk -F, '{ s += $4 } END { print s }' orders.csv > answer.txt" },
  {
    tokenIds: Array.from({ length: 40 }, (_, i) => 1000 + i),
    promptTokenIds: Array.from({ length: 2000 }, (_, i) => i),
  },
);
const server = await createScriptedModelServer();
const keyVar = 'KAROTTE_BENCH_KEY';
process.env[keyVar] = 'sk-bench';
const agent = await createOpenAIAgent({
  model: 'bench',
  baseURL: server.url,
  apiKeyEnv: keyVar,
  extraBody: { return_token_ids: true },
});
const signal = new AbortController().signal;
const request = {
  conversation,
  tools,
  remaining: { turns: 100, timeMs: 3_600_000 },
  turnIndex: 0,
  abortSignal: signal,
};
const wireTools = tools.map((t) => ({ type: 'function', function: t }));

async function agentTurn() {
  server.push(reply);
  const started = performance.now();
  const response = await agent.turn(request);
  const ms = performance.now() - started;
  if (response.tokens?.completionIds.length !== 40) throw new Error('the agent lost the token ids');
  return ms;
}

const transcript = await Transcript.create(path.join(transcriptDir, 'transcript.jsonl'));

/** The agent's turn and the two events an episode appends for it (as core's episode does). */
async function recordedTurn() {
  server.push(reply);
  const started = performance.now();
  const response = await agent.turn(request);
  await transcript.append('model_call', {
    step: 0,
    turn: 1,
    agent: 'openai',
    finishReason: response.finishReason,
    usage: response.usage ?? null,
    timing: { modelMs: response.timing.modelMs, retryWaitMs: response.timing.retryWaitMs },
    attempts: response.attempts ?? 1,
    ...(response.tokens === undefined ? {} : { tokens: response.tokens }),
    toolCalls: response.message.tool_calls?.length ?? 0,
    empty: false,
  });
  await transcript.append('message', { step: 0, message: response.message });
  const ms = performance.now() - started;
  if (response.tokens?.completionIds.length !== 40) throw new Error('the agent lost the token ids');
  return ms;
}

async function fetchTurn() {
  server.push(reply);
  const started = performance.now();
  const response = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    body: JSON.stringify({
      model: 'bench',
      messages: conversation,
      tools: wireTools,
      tool_choice: 'auto',
      return_token_ids: true,
    }),
  });
  const body = await response.json();
  const ms = performance.now() - started;
  if (body.choices[0].token_ids.length !== 40) throw new Error('fetch lost the token ids');
  return ms;
}

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

try {
  for (let i = 0; i < warmup; i += 1) {
    await agentTurn();
    await recordedTurn();
    await fetchTurn();
  }
  const agentMs = [];
  const recordedMs = [];
  const fetchMs = [];
  // Interleaved, in a rotating order, so all three see the same machine load.
  const legs = [
    async () => agentMs.push(await agentTurn()),
    async () => recordedMs.push(await recordedTurn()),
    async () => fetchMs.push(await fetchTurn()),
  ];
  for (let i = 0; i < turns; i += 1) {
    for (let j = 0; j < legs.length; j += 1) await legs[(i + j) % legs.length]();
  }
  const a50 = percentile(agentMs, 50);
  const r50 = percentile(recordedMs, 50);
  const f50 = percentile(fetchMs, 50);
  const row = (name, values) =>
    `| ${name.padEnd(29)} | ${percentile(values, 50).toFixed(3).padStart(10)} | ${percentile(values, 90).toFixed(3).padStart(10)} |`;
  console.log(
    `turns: ${turns} each (after ${warmup} warm-up), conversation: ${conversation.length} messages, Node.js ${process.version}`,
  );
  console.log('| per turn                      | median ms  | p90 ms     |');
  console.log('| ----------------------------- | ---------- | ---------- |');
  console.log(row('bare fetch (baseline)', fetchMs));
  console.log(row('@karotte/agents openai agent', agentMs));
  console.log(row('agent + transcript (2 events)', recordedMs));
  console.log(
    `overhead (median): agent ${(a50 - f50).toFixed(3)} ms per turn (${(a50 / f50).toFixed(2)}x fetch); ` +
      `agent + transcript ${(r50 - f50).toFixed(3)} ms per turn (${(r50 / f50).toFixed(2)}x fetch)`,
  );
} finally {
  await transcript.close();
  fs.rmSync(transcriptDir, { recursive: true, force: true });
  await server.close();
}
