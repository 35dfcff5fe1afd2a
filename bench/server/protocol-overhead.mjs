#!/usr/bin/env node
// The per-step overhead of `karotte serve`'s other protocols against its native turn, side by
// side: an OpenEnv `step` over the WebSocket (/openenv/<token>/ws, Node.js's own WebSocket
// client) and an MCP `tools/call` (/v1/episodes/{id}/mcp, the official SDK's Client over
// Streamable HTTP), each against the baseline of a native HTTP turn (POST
// /v1/episodes/{id}/turns through the Node.js client on a keep-alive connection). Three
// episodes of one server alive at once, the same command (`true`) alternated step by step so all
// see the same machine. Medians; the bar is at most 3 ms added over the native turn.
//
//   pnpm build && node bench/server/protocol-overhead.mjs [--steps N]
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEnvironmentClient, createEnvironmentServer } from '../../packages/server/dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const serverDir = path.resolve(here, '../../packages/server');
// The SDK is the server package's dependency: resolve it from there.
const requireFromServer = createRequire(path.join(serverDir, 'package.json'));
const { Client } = await import(requireFromServer.resolve('@modelcontextprotocol/sdk/client/index.js'));
const { StreamableHTTPClientTransport } = await import(
  requireFromServer.resolve('@modelcontextprotocol/sdk/client/streamableHttp.js')
);
const taskDir = path.resolve(here, '../../apps/karotte/examples/quarterly-revenue');
const steps = Number(process.argv[process.argv.indexOf('--steps') + 1]) || 200;
const WARM_UP = 10;
const MAX_TURNS = steps + WARM_UP + 10;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
const call = (i) => ({
  id: `call_${i}`,
  type: 'function',
  function: { name: 'bash', arguments: '{"command": "true"}' },
});
const message = (i) => ({ role: 'assistant', content: null, tool_calls: [call(i)] });

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-protocols-'));
fs.mkdirSync(path.join(dir, 'tasks'));
fs.symlinkSync(taskDir, path.join(dir, 'tasks', 'quarterly-revenue'));
const token = 'bench-token-0123456789abcdef';
const server = await createEnvironmentServer({
  tasksDir: path.join(dir, 'tasks'),
  token,
  maxEpisodes: 3,
  hiddenPaths: [path.dirname(taskDir)],
});
let ws;
let mcp;
try {
  const address = await server.listen({ host: '127.0.0.1', port: 0 });
  const client = createEnvironmentClient({ baseUrl: `http://${address}`, token });
  const native = await client.createEpisode({ taskId: 'quarterly-revenue', maxTurns: MAX_TURNS });

  // OpenEnv: one connection, one episode.
  ws = new WebSocket(`ws://${address}/openenv/${token}/ws`);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const frames = [];
  let waiting;
  ws.onmessage = (event) => {
    const frame = JSON.parse(String(event.data));
    if (waiting !== undefined) {
      const w = waiting;
      waiting = undefined;
      w(frame);
    } else frames.push(frame);
  };
  const send = (frame) =>
    new Promise((resolve) => {
      waiting = resolve;
      ws.send(JSON.stringify(frame));
    });
  const reset = await send({ type: 'reset', data: { taskId: 'quarterly-revenue', maxTurns: MAX_TURNS } });
  if (reset.type !== 'observation') throw new Error(`reset failed: ${JSON.stringify(reset)}`);

  // MCP: an episode made over HTTP, its tools over Streamable HTTP.
  const mcpEpisode = await client.createEpisode({ taskId: 'quarterly-revenue', maxTurns: MAX_TURNS });
  mcp = new Client({ name: 'karotte-bench', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`http://${address}/v1/episodes/${mcpEpisode.episodeId}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );

  const times = { native: [], openenv: [], mcp: [] };
  for (let i = 0; i < steps + WARM_UP; i++) {
    let started = performance.now();
    const answer = await client.turn(native.episodeId, { turnId: `t${i}`, message: message(i) });
    const nativeMs = performance.now() - started;
    if (answer.toolMessages.length !== 1) throw new Error('the native turn gave no tool message');
    started = performance.now();
    const step = await send({ type: 'step', data: { message: message(i) } });
    const openenvMs = performance.now() - started;
    if (step.type !== 'observation' || step.data.observation.toolMessages.length !== 1)
      throw new Error(`the OpenEnv step failed: ${JSON.stringify(step)}`);
    started = performance.now();
    const result = await mcp.callTool({ name: 'bash', arguments: { command: 'true' } });
    const mcpMs = performance.now() - started;
    if (result.isError !== false) throw new Error(`the MCP call failed: ${JSON.stringify(result)}`);
    if (i >= WARM_UP) {
      times.native.push(nativeMs);
      times.openenv.push(openenvMs);
      times.mcp.push(mcpMs);
    }
  }
  await client.cancel(native.episodeId);
  await client.cancel(mcpEpisode.episodeId);
  const base = median(times.native);
  console.log(`steps measured: ${times.native.length} of each (after ${WARM_UP} of warm-up), command: true`);
  console.log(
    `native HTTP turn (baseline):   median ${base.toFixed(2)} ms, p90 ${p90(times.native).toFixed(2)} ms`,
  );
  for (const [name, label] of [
    ['openenv', 'OpenEnv step (WebSocket):   '],
    ['mcp', 'MCP tools/call (Streamable):'],
  ]) {
    const m = median(times[name]);
    console.log(
      `${label}   median ${m.toFixed(2)} ms, p90 ${p90(times[name]).toFixed(2)} ms; ` +
        `added ${(m - base).toFixed(2)} ms (bar: 3 ms), ratio ${(m / base).toFixed(2)}x`,
    );
  }
} finally {
  ws?.close();
  await mcp?.close().catch(() => undefined);
  await server.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
