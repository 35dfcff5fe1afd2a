// `karotte serve` driven over real HTTP by the project's Node.js client (@karotte/server's
// createEnvironmentClient), as a trainer drives it: real sandboxes, real graders, the built CLI.
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedModelServer, toolCallReply, textReply } from '@karotte/agents/testing';
import type { EnvironmentClient } from '@karotte/server';
import { waitFor } from '../../../test/support/index.js';
import {
  bashMessage,
  examples,
  leasedUids,
  leftoversOfUid,
  replayOf,
  serverStateDirs,
  startServe,
  type Served,
  writeSmallRomanTask,
} from './serve-support.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI)
  console.log('[karotte] serve integration tests skipped: they need root (real sandboxes)');

/** The uid an episode's sandbox got, from its event stream (`sandbox_ready`). */
async function uidOf(client: EnvironmentClient, episodeId: string): Promise<number> {
  const controller = new AbortController();
  for await (const event of client.events(episodeId, { abortSignal: controller.signal })) {
    if (event.type === 'sandbox_ready') {
      controller.abort();
      return event.data['uid'] as number;
    }
  }
  throw new Error('no sandbox_ready event');
}

async function solve(
  client: EnvironmentClient,
  taskId: string,
  messages: readonly Record<string, unknown>[],
) {
  const episode = await client.createEpisode({ taskId });
  for (const [i, message] of messages.entries()) {
    const answer = await client.turn(episode.episodeId, { turnId: `turn-${i}`, message: message as never });
    if (answer.done) break;
  }
  return { episode, result: await client.finish(episode.episodeId) };
}

describe.skipIf(!isRoot && !inCI)('karotte serve over HTTP (Node.js client)', () => {
  let served: Served;
  let client: EnvironmentClient;
  beforeAll(async () => {
    served = await startServe(['--max-episodes', '8'], { env: { KAROTTE_TEST_KEY: 'scripted-key' } });
    client = served.client();
  });
  afterAll(async () => {
    expect(await served.stop()).toBe(0);
  });

  it('lists the tasks without grader data, and serves its OpenAPI document', async () => {
    expect(await client.tasks()).toEqual({
      tasks: [
        { id: 'quarterly-revenue', steps: 1 },
        { id: 'roman-numerals', steps: 1 },
      ],
    });
    const doc = await client.request('GET', '/v1/openapi.json');
    expect(doc.status).toBe(200);
    const checkedIn: unknown = JSON.parse(
      fs.readFileSync(
        path.join(import.meta.dirname, '..', '..', '..', 'packages', 'server', 'openapi.json'),
        'utf8',
      ),
    );
    expect(doc.body).toEqual(checkedIn);
  });

  it.each(['quarterly-revenue', 'roman-numerals'])(
    '%s: its control.json solves it through the protocol, with the evidence in the result',
    async (taskId) => {
      const { episode, result } = await solve(
        client,
        taskId,
        replayOf(path.join(examples, taskId, 'control.json')),
      );
      expect(episode.tools.map((t) => (t['function'] as { name: string }).name)).toContain('bash');
      expect(episode.messages.map((m) => m['role'])).toEqual(['system', 'user']);
      expect(episode.worldFingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(result).toMatchObject({
        taskId,
        status: 'passed',
        score: 1,
        reward: 1,
        blame: 'none',
        trainable: true,
      });
      expect(result.misbehavior).toEqual([]);
      const step = result.attestation.steps[0]!;
      expect(step.submissionSha256).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(step.reaper).toMatchObject({ confirmed: true, survivors: [] });
      expect(step.grader).toMatchObject({ exitCode: 0, status: 'scored', confinement: 'sandbox' });
      expect(result.attestation.network).toEqual({ checked: true, isolated: true });
      expect(leftoversOfUid(result.sandbox.uid!)).toEqual([]);
    },
  );

  it('a wrong answer fails with reward 0 and blame none; a symlinked answer is the student’s misbehavior', async () => {
    const wrong = await solve(client, 'quarterly-revenue', [
      bashMessage('c0', 'echo 12 > answer.txt'),
      { role: 'assistant', content: 'done' },
    ]);
    expect(wrong.result).toMatchObject({ status: 'failed', reward: 0, blame: 'none', trainable: true });
    const link = await solve(client, 'quarterly-revenue', [
      bashMessage('c0', 'ln -s /etc/passwd answer.txt'),
      { role: 'assistant', content: 'done' },
    ]);
    expect(link.result).toMatchObject({ status: 'failed', reward: 0, blame: 'student', trainable: true });
    expect(link.result.misbehavior.length).toBeGreaterThan(0);
  });

  it('a group of 8 is built from one seed with equal world fingerprints', async () => {
    const tasks = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-serve-group-'));
    try {
      writeSmallRomanTask(tasks);
      const group8 = await startServe(['--max-episodes', '8'], { tasks });
      try {
        const c = group8.client();
        const group = await c.createGroup({ taskId: 'roman-small', size: 8, seed: 1234 });
        expect(group.episodes).toHaveLength(8);
        expect(new Set(group.episodes.map((e) => e.worldFingerprint))).toEqual(
          new Set([group.worldFingerprint]),
        );
        expect(new Set(group.episodes.map((e) => e.episodeId)).size).toBe(8);
        expect(group.episodes.every((e) => e.seed === 1234 && e.groupId === group.groupId)).toBe(true);
        const results = await Promise.all(group.episodes.map((e) => c.finish(e.episodeId)));
        expect(results.map((r) => r.status)).toEqual(Array(8).fill('failed'));
        expect(results.map((r) => r.worldFingerprint)).toEqual(Array(8).fill(group.worldFingerprint));
        expect(new Set(results.map((r) => r.sandbox.uid)).size).toBe(8);
        // Another seed is another world.
        const other = await c.createEpisode({ taskId: 'roman-small', seed: 1235 });
        expect(other.worldFingerprint).not.toBe(group.worldFingerprint);
        await c.cancel(other.episodeId);
        for (const r of results) expect(leftoversOfUid(r.sandbox.uid!)).toEqual([]);
      } finally {
        expect(await group8.stop()).toBe(0);
      }
    } finally {
      fs.rmSync(tasks, { recursive: true, force: true });
    }
  });

  it('the event stream is resumable by sequence number', async () => {
    const { episode } = await solve(client, 'quarterly-revenue', [
      bashMessage('c0', 'true'),
      { role: 'assistant', content: 'x' },
    ]);
    const all = [];
    for await (const event of client.events(episode.episodeId)) all.push(event);
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i));
    expect(all.map((e) => e.type)).toEqual(
      expect.arrayContaining([
        'episode_created',
        'sandbox_ready',
        'tool_call',
        'tool_result',
        'turn',
        'graded',
        'episode_finished',
      ]),
    );
    expect(all.at(-1)!.type).toBe('episode_finished');
    const resumed = [];
    for await (const event of client.events(episode.episodeId, { from: 4 })) resumed.push(event);
    expect(resumed).toEqual(all.slice(4));
    // A browser's EventSource resumes with the last id it saw, in the Last-Event-ID header.
    const reconnect = await fetch(`http://${served.address}/v1/episodes/${episode.episodeId}/events`, {
      headers: { authorization: `Bearer ${served.token}`, 'last-event-id': '3' },
    });
    expect(reconnect.status).toBe(200);
    const ids = [...(await reconnect.text()).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(all.slice(4).map((e) => e.seq));
  });

  it('a repeated turnId returns the stored answer and runs nothing again; another message with it is 409', async () => {
    const episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
    const id = episode.episodeId;
    const count = bashMessage('c0', 'echo once >> count.txt; wc -l < count.txt');
    const first = await client.turn(id, { turnId: 'a', message: count as never });
    // A new client: a reconnect.
    const again = await served.client().turn(id, { turnId: 'a', message: count as never });
    expect(again).toEqual(first);
    const check = await client.turn(id, {
      turnId: 'b',
      message: bashMessage('c1', 'wc -l < count.txt') as never,
    });
    expect(check.toolMessages[0]!.content).toMatch(/^1\n/);
    const conflict = await client.request('POST', `/v1/episodes/${id}/turns`, {
      turnId: 'a',
      message: bashMessage('c9', 'echo other'),
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ error: { code: 'TURN_CONFLICT', field: 'turnId' } });
    await client.finish(id);
    const after = await client.request('POST', `/v1/episodes/${id}/turns`, {
      turnId: 'z',
      message: bashMessage('c2', 'true'),
    });
    expect([after.status, (after.body as { error: { code: string } }).error.code]).toEqual([
      409,
      'EPISODE_FINISHED',
    ]);
    // The stored answers outlive the finish.
    expect(await client.storedTurn(id, 'a')).toEqual(first);
  });

  it('a client that disconnects mid-turn: the turn completes and its answer is retrievable', async () => {
    const episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
    const id = episode.episodeId;
    const body = JSON.stringify({
      turnId: 'slow',
      message: bashMessage('c0', 'sleep 1; echo finished-late'),
    });
    const [host, port] = served.address.split(':');
    await new Promise<void>((resolve) => {
      const req = http.request({
        host,
        port: Number(port),
        method: 'POST',
        path: `/v1/episodes/${id}/turns`,
        headers: {
          authorization: `Bearer ${served.token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      });
      req.on('error', () => resolve());
      req.end(body, () =>
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 200),
      );
    });
    const answer = await client.storedTurn(id, 'slow');
    expect(answer.toolMessages[0]!.content).toContain('finished-late');
    await client.cancel(id);
  });

  it('refuses bad input with 400 naming the field, 401 without the token, 404 for unknown ids, 413 past the size cap', async () => {
    const [host, port] = served.address.split(':');
    const raw = (method: string, p: string, body: string | Buffer, token: string | null = served.token) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          {
            host,
            port: Number(port),
            method,
            path: p,
            headers: {
              ...(token === null ? {} : { authorization: `Bearer ${token}` }),
              'content-type': 'application/json',
            },
          },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString('utf8')));
            res.on('end', () => resolve({ status: res.statusCode!, body: text }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    expect((await raw('GET', '/v1/tasks', '', null)).status).toBe(401);
    expect((await raw('GET', '/v1/tasks', '', 'wrong-token')).status).toBe(401);
    expect((await raw('GET', '/v1/openapi.json', '', null)).status).toBe(401);
    const malformed = await raw('POST', '/v1/episodes', '{"taskId": ');
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.body)).toMatchObject({ error: { code: 'INVALID_JSON' } });
    const unknown = await raw('POST', '/v1/episodes', '{"taskId": "quarterly-revenue", "sneaky": true}');
    expect([unknown.status, JSON.parse(unknown.body).error.field]).toEqual([400, 'sneaky']);
    const wrongType = await raw('POST', '/v1/episodes', '{"taskId": 5}');
    expect([wrongType.status, JSON.parse(wrongType.body).error.field]).toEqual([400, 'taskId']);
    expect((await raw('POST', '/v1/episodes', '{"taskId": "no-such-task"}')).status).toBe(404);
    const big = await raw('POST', '/v1/episodes', Buffer.alloc(5 * 1024 * 1024, 0x20));
    expect([big.status, JSON.parse(big.body).error.code]).toEqual([413, 'BODY_TOO_LARGE']);
    expect(
      (
        await raw(
          'POST',
          '/v1/episodes/ep_nope/turns',
          JSON.stringify({ turnId: 'a', message: { role: 'assistant', content: 'x' } }),
        )
      ).status,
    ).toBe(404);
    expect((await raw('POST', '/v1/episodes/ep_nope/finish', '{}')).status).toBe(404);
    expect((await raw('DELETE', '/v1/episodes/ep_nope', '')).status).toBe(404);
    const episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
    const badMessage = await raw(
      'POST',
      `/v1/episodes/${episode.episodeId}/turns`,
      JSON.stringify({ turnId: 'a', message: { role: 'user', content: 'x' } }),
    );
    expect([badMessage.status, JSON.parse(badMessage.body).error.field]).toEqual([400, 'message.role']);
    await client.cancel(episode.episodeId);
    // The server is still well.
    expect((await client.tasks()).tasks).toHaveLength(2);
  });

  it('100 connections that never send a byte do not stop it serving others', async () => {
    const [host, port] = served.address.split(':');
    const sockets = await Promise.all(
      Array.from(
        { length: 100 },
        () =>
          new Promise<net.Socket>((resolve, reject) => {
            const s = net.connect(Number(port), host, () => resolve(s));
            s.on('error', reject);
          }),
      ),
    );
    try {
      const started = Date.now();
      expect((await client.tasks()).tasks).toHaveLength(2);
      const { result } = await solve(
        client,
        'quarterly-revenue',
        replayOf(path.join(examples, 'quarterly-revenue', 'control.json')),
      );
      expect(result.status).toBe('passed');
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });

  it('a student cannot reach the server’s port from inside its sandbox', async () => {
    const [, port] = served.address.split(':');
    const episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
    const probe = await client.turn(episode.episodeId, {
      turnId: 'probe',
      message: bashMessage(
        'c0',
        `(exec 3<>/dev/tcp/127.0.0.1/${port} && printf 'GET /v1/tasks HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3) 2>&1; echo "exit=$?"`,
      ) as never,
    });
    const text = probe.toolMessages[0]!.content as string;
    expect(text).toMatch(/Connection refused/);
    expect(text).not.toContain('HTTP/1.');
    await client.cancel(episode.episodeId);
  });

  it.each([
    [
      'read the answer key by path',
      `cat ${path.join(examples, 'quarterly-revenue', 'hidden', 'expected_total_cents.txt')} > answer.txt`,
    ],
    [
      'find the answer key',
      "find / -name 'expected_total_cents*' 2>/dev/null | head -n 1 | xargs -r cat > answer.txt",
    ],
    [
      'symlink the answer key',
      `ln -s ${path.join(examples, 'quarterly-revenue', 'hidden', 'expected_total_cents.txt')} answer.txt`,
    ],
    [
      'other processes’ environ and cmdline, for the token',
      'cat /proc/1/environ /proc/*/cmdline 2>/dev/null | tr "\\0" " " | grep -o "karotte-test-[a-z0-9]*" | head -n 1 > answer.txt',
    ],
    ['a raw TCP connect out', '(exec 3<>/dev/tcp/1.1.1.1/80 && echo reached) > answer.txt 2>&1'],
    ['a DNS lookup', 'getent hosts example.com > answer.txt 2>&1'],
  ])('an attack through the protocol scores 0: %s', async (_name, command) => {
    const { result } = await solve(client, 'quarterly-revenue', [
      bashMessage('c0', command),
      { role: 'assistant', content: 'done' },
    ]);
    expect(result.status, JSON.stringify(result.error)).not.toBe('error');
    expect(result.reward).toBe(0);
    expect(result.trainable).toBe(true);
  });

  it('run mode: Karotte drives a model (a scripted chat-completions server) and returns the rollout with token data', async () => {
    const control = replayOf(path.join(examples, 'quarterly-revenue', 'control.json'));
    const calls = control.flatMap(
      (m) => (m['tool_calls'] as { function: { arguments: string } }[] | undefined) ?? [],
    );
    const model = await createScriptedModelServer({
      replies: [
        ...calls.map((call, i) =>
          toolCallReply('bash', call.function.arguments, {
            tokenIds: [10 + i, 11 + i],
            promptTokenIds: [1, 2, 3],
            logprobs: [-0.5, -0.25],
          }),
        ),
        textReply('The total is in answer.txt.', { tokenIds: [99] }),
      ],
    });
    try {
      const episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
      const rollout = await client.run(episode.episodeId, {
        agent: {
          kind: 'openai-compatible',
          baseUrl: model.url,
          model: 'scripted',
          apiKeyEnv: 'KAROTTE_TEST_KEY',
          extraBody: { return_token_ids: true, logprobs: true },
        },
      });
      expect(rollout.result).toMatchObject({ status: 'passed', reward: 1, blame: 'none' });
      expect(rollout.turns).toHaveLength(calls.length + 1);
      expect(rollout.turns[0]).toMatchObject({
        finishReason: 'tool_calls',
        tokens: { completionIds: [10, 11], promptIds: [1, 2, 3], logprobs: [-0.5, -0.25] },
      });
      expect(rollout.turns.at(-1)).toMatchObject({ finishReason: 'stop', tokens: { completionIds: [99] } });
      expect((rollout.messages as { role: string }[]).map((m) => m.role)).toEqual([
        'system',
        'user',
        'assistant',
        'tool',
        'assistant',
        'tool',
        'assistant',
      ]);
      expect(model.requests[0]!.headers['authorization']).toBe('Bearer scripted-key');
      // A run on an episode that already took a turn is refused.
      const used = await client.createEpisode({ taskId: 'quarterly-revenue' });
      await client.turn(used.episodeId, { turnId: 't', message: bashMessage('c0', 'true') as never });
      await expect(
        client.run(used.episodeId, {
          agent: { kind: 'openai-compatible', baseUrl: model.url, model: 'x', apiKeyEnv: 'KAROTTE_TEST_KEY' },
        }),
      ).rejects.toMatchObject({ status: 409 });
      await client.cancel(used.episodeId);
    } finally {
      await model.close();
    }
  });
});

describe.skipIf(!isRoot && !inCI)('karotte serve: capacity, idle episodes, signals, a unix socket', () => {
  it('at capacity a create is 503 with Retry-After, and the client retries until there is room', async () => {
    const served = await startServe(['--max-episodes', '1']);
    try {
      const client = served.client({ maxRetries: 0 });
      const first = await client.createEpisode({ taskId: 'quarterly-revenue' });
      const refused = await client.request('POST', '/v1/episodes', { taskId: 'quarterly-revenue' });
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.body).toMatchObject({ error: { code: 'AT_CAPACITY' } });
      const retrying = served.client().createEpisode({ taskId: 'quarterly-revenue' });
      setTimeout(() => void client.finish(first.episodeId), 500);
      const second = await retrying;
      await served.client().cancel(second.episodeId);
    } finally {
      expect(await served.stop()).toBe(0);
    }
  });

  it('an idle episode is cancelled and torn down', async () => {
    const served = await startServe(['--idle-timeout-ms', '1500']);
    try {
      const client = served.client();
      const episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
      const uid = await uidOf(client, episode.episodeId);
      await waitFor(() => leftoversOfUid(uid).length === 0, 20_000, 100);
      const turn = await client.request('POST', `/v1/episodes/${episode.episodeId}/turns`, {
        turnId: 'late',
        message: bashMessage('c0', 'true'),
      });
      expect(turn.status).toBe(409);
      const result = await client.finish(episode.episodeId);
      expect(result).toMatchObject({
        status: 'error',
        blame: 'infra',
        reward: 0,
        trainable: false,
        error: { code: 'ABORTED' },
      });
    } finally {
      expect(await served.stop()).toBe(0);
    }
  });

  it('SIGTERM with a live episode mid-command: tears it down and exits 0', async () => {
    const served = await startServe();
    const client = served.client();
    const episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
    const uid = await uidOf(client, episode.episodeId);
    const pending = client
      .turn(episode.episodeId, { turnId: 'long', message: bashMessage('c0', 'sleep 60') as never })
      .catch(() => null);
    await new Promise((r) => setTimeout(r, 500));
    expect(await served.stop(30_000)).toBe(0);
    await pending;
    expect(leftoversOfUid(uid)).toEqual([]);
    expect(served.stderr()).toContain('SIGTERM');
  });

  it('a SIGKILLed server’s sandboxes are reclaimed when the next one starts', async () => {
    const first = await startServe();
    const client = first.client();
    const episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
    const uid = await uidOf(client, episode.episodeId);
    await client.turn(episode.episodeId, {
      turnId: 'bg',
      message: bashMessage('c0', '(sleep 600 &) ; echo started') as never,
    });
    first.child.kill('SIGKILL');
    await first.stop();
    expect(leasedUids()).toContain(uid);
    // The killed server's world is still there (lease, processes) when the next one starts.
    // Every harness on the host reclaims dead harnesses' leftovers at its start (`karotte run`
    // of a test running beside this one too), so which one reclaims it is a race; what must
    // hold is that it is gone once the next server listens. Ours says so when it was the one.
    expect(leftoversOfUid(uid).length).toBeGreaterThan(0);
    // The killed server could not remove its state directory (transcripts of its episodes).
    // It is the one holding the episode's directory (another server may be running beside).
    const killedState = serverStateDirs().filter((dir) => fs.existsSync(path.join(dir, episode.episodeId)));
    expect(killedState).toHaveLength(1);
    const second = await startServe();
    try {
      expect(leftoversOfUid(uid)).toEqual([]);
    } finally {
      expect(await second.stop()).toBe(0);
      for (const dir of killedState) fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('on a unix socket (mode 0600): the client works, and a student cannot connect to it', async () => {
    fs.mkdirSync('/var/lib/karotte', { recursive: true, mode: 0o755 });
    const dir = fs.mkdtempSync('/var/lib/karotte/karotte-serve-sock-');
    fs.chmodSync(dir, 0o755);
    const socket = path.join(dir, 'serve.sock');
    const served = await startServe(['--socket', socket]).catch((error: unknown) => {
      fs.rmSync(dir, { recursive: true, force: true });
      throw error;
    });
    try {
      expect(served.address).toBe(socket);
      expect(fs.statSync(socket).mode & 0o777).toBe(0o600);
      const client = served.client();
      const episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
      const probe = await client.turn(episode.episodeId, {
        turnId: 'probe',
        message: bashMessage(
          'c0',
          `python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"GET /v1/tasks HTTP/1.0\\r\\n\\r\\n"); print(s.recv(100))' ${socket} 2>&1 | tail -n 1`,
        ) as never,
      });
      const text = probe.toolMessages[0]!.content as string;
      expect(text).toMatch(/PermissionError|FileNotFoundError|ConnectionRefusedError/);
      expect(text).not.toContain('HTTP/1.');
      await client.cancel(episode.episodeId);
    } finally {
      expect(await served.stop()).toBe(0);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
