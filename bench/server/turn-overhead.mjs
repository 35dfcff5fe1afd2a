#!/usr/bin/env node
// The per-turn protocol overhead of `karotte serve`: the HTTP round trip of a turn (POST
// /v1/episodes/{id}/turns to its tool result, through the Node.js client on a keep-alive
// loopback connection) against calling `Episode.turn()` in process, side by side: one episode
// of each, alive at once, the same command (`true`) alternated turn by turn so both see the same
// machine. Medians; the bar is at most 3 ms added.
//
//   pnpm build && node bench/server/turn-overhead.mjs [--turns N]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEpisode, createSandboxWorld, loadTask } from '../../packages/core/dist/index.js';
import { createEnvironmentClient, createEnvironmentServer } from '../../packages/server/dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const taskDir = path.resolve(here, '../../apps/karotte/examples/quarterly-revenue');
const turns = Number(process.argv[process.argv.indexOf('--turns') + 1]) || 200;
const MAX_TURNS = turns + 10;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const message = (i) => ({
  role: 'assistant',
  content: null,
  tool_calls: [
    { id: `call_${i}`, type: 'function', function: { name: 'bash', arguments: '{"command": "true"}' } },
  ],
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-server-'));
fs.mkdirSync(path.join(dir, 'tasks'));
fs.symlinkSync(taskDir, path.join(dir, 'tasks', 'quarterly-revenue'));
const token = 'bench-token-0123456789abcdef';
const server = await createEnvironmentServer({ tasksDir: path.join(dir, 'tasks'), token, maxEpisodes: 2 });
const task = await loadTask(taskDir);
const local = createEpisode(task, {
  outDir: path.join(dir, 'local'),
  createWorld: (spec) => createSandboxWorld(spec, { hiddenPaths: [dir] }),
  maxTurns: MAX_TURNS,
});
try {
  const address = await server.listen({ host: '127.0.0.1', port: 0 });
  const client = createEnvironmentClient({ baseUrl: `http://${address}`, token });
  const served = await client.createEpisode({ taskId: 'quarterly-revenue', maxTurns: MAX_TURNS });
  await local.start();
  const http = [];
  const inProcess = [];
  // A few turns of warm-up on each (JIT, the shell's first commands), not counted.
  for (let i = 0; i < turns + 10; i++) {
    let started = performance.now();
    const answer = await client.turn(served.episodeId, { turnId: `t${i}`, message: message(i) });
    const httpMs = performance.now() - started;
    if (answer.toolMessages.length !== 1) throw new Error('the served turn gave no tool message');
    started = performance.now();
    const outcome = await local.turn({
      message: message(i),
      finishReason: 'tool_calls',
      timing: { modelMs: 0, retryWaitMs: 0 },
    });
    const localMs = performance.now() - started;
    if (outcome.observations.length !== 1) throw new Error('the in-process turn gave no observation');
    if (i >= 10) {
      http.push(httpMs);
      inProcess.push(localMs);
    }
  }
  await client.cancel(served.episodeId);
  const h = median(http);
  const l = median(inProcess);
  const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
  console.log(`turns measured: ${http.length} of each (after 10 of warm-up), command: true`);
  console.log(
    `in process (Episode.turn):     median ${l.toFixed(2)} ms, p90 ${p90(inProcess).toFixed(2)} ms`,
  );
  console.log(`over HTTP (karotte serve):     median ${h.toFixed(2)} ms, p90 ${p90(http).toFixed(2)} ms`);
  console.log(
    `added by the protocol:         median ${(h - l).toFixed(2)} ms (bar: 3 ms), ratio ${(h / l).toFixed(2)}x`,
  );
} finally {
  await local.finish().catch(() => undefined);
  await server.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
