// The OpenEnv WebSocket endpoint (contract section 15) driven by a client written from
// OpenEnv's own client code (test/protocols.ts), against a real server: real sandboxes
// as the student, real graders, real sockets. Needs root.
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironmentClient } from './client.js';
import {
  bashMessage,
  eventually,
  examples,
  leftovers,
  OpenEnvTestClient,
  replayOf,
  sandboxIdOfUid,
  sandboxUidOf,
  startTestServer,
  type Frame,
  type TestServer,
} from '../test/protocols.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI)
  console.log('[karotte] OpenEnv integration tests skipped: they need root (real sandboxes)');

const KEY = path.join(examples, 'quarterly-revenue', 'hidden', 'expected_total_cents.txt');

function observation(frame: Frame): Record<string, unknown> {
  expect(frame.type, JSON.stringify(frame)).toBe('observation');
  return frame.data['observation'] as Record<string, unknown>;
}

function metadata(frame: Frame): Record<string, unknown> {
  return observation(frame)['metadata'] as Record<string, unknown>;
}

/** The uid of the episode on a connection, from the HTTP event stream (`sandbox_ready`). */
const uidOf = sandboxUidOf;

describe.skipIf(!isRoot && !inCI)('the OpenEnv endpoint of karotte serve', () => {
  let t: TestServer;
  let base: string;
  beforeAll(async () => {
    t = await startTestServer({ maxEpisodes: 4, reconnectGraceMs: 1_500, maxBodyBytes: 256 * 1024 });
    base = `http://${t.address}/openenv/${t.token}`;
  });
  afterAll(async () => {
    await t.stop();
    expect(t.server.liveEpisodes).toBe(0);
  });

  it('a control solves quarterly-revenue: done with reward 1 after collect-and-grade, state, close tears down', async () => {
    const env = await OpenEnvTestClient.connect(base);
    const reset = await env.reset({ taskId: 'quarterly-revenue', seed: 7 });
    expect(reset.data).toMatchObject({ reward: null, done: false });
    const first = observation(reset);
    expect((first['messages'] as { role: string }[]).map((m) => m.role)).toEqual(['system', 'user']);
    expect((first['tools'] as { function: { name: string } }[]).map((x) => x.function.name)).toContain(
      'bash',
    );
    const about = first['metadata'] as { episodeId: string; seed: number; worldFingerprint: string };
    expect(about.seed).toBe(7);
    expect(about.worldFingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    const uid = await uidOf(t, about.episodeId);
    const sandboxId = sandboxIdOfUid(uid);
    expect(sandboxId).toBeDefined();
    const control = replayOf(path.join(examples, 'quarterly-revenue', 'control.json'));
    const frames: Frame[] = [];
    for (const message of control) {
      const frame = await env.step({ message });
      frames.push(frame);
      if (frame.data['done'] === true) break;
    }
    expect(frames).toHaveLength(3);
    expect(frames.slice(0, 2).map((f) => [f.data['done'], f.data['reward']])).toEqual([
      [false, null],
      [false, null],
    ]);
    const toolMessages = observation(frames[1]!)['toolMessages'] as { role: string; content: string }[];
    expect(toolMessages).toHaveLength(1);
    expect(toolMessages[0]!.role).toBe('tool');
    expect(toolMessages[0]!.content).toMatch(/^\d+\n/);
    expect((metadata(frames[0]!)['remaining'] as { turns: number }).turns).toBe(199);
    const last = frames[2]!;
    expect(last.data).toMatchObject({ done: true, reward: 1 });
    expect(metadata(last)['result']).toMatchObject({
      status: 'passed',
      reward: 1,
      blame: 'none',
      seed: 7,
      worldFingerprint: about.worldFingerprint,
    });
    const state = await env.state();
    expect(state).toEqual({
      type: 'state',
      data: expect.objectContaining({ episode_id: about.episodeId, step_count: 3, done: true }) as unknown,
    });
    expect(await env.disconnect()).toBe(1000);
    expect(leftovers(uid, sandboxId)).toEqual([]);
  });

  it('roman-numerals: its control solves it through OpenEnv (reward 1)', async () => {
    const env = await OpenEnvTestClient.connect(base);
    try {
      observation(await env.reset({ taskId: 'roman-numerals' }));
      let last: Frame | undefined;
      for (const message of replayOf(path.join(examples, 'roman-numerals', 'control.json'))) {
        last = await env.step({ message });
        if (last.data['done'] === true) break;
      }
      expect(last!.data).toMatchObject({ done: true, reward: 1 });
      expect(metadata(last!)['result']).toMatchObject({ status: 'passed', blame: 'none' });
    } finally {
      await env.disconnect();
    }
  });

  it.each([
    ['read the answer key by path', `cat ${KEY} > answer.txt`],
    [
      'find the answer key',
      "find / -name 'expected_total_cents*' 2>/dev/null | head -n 1 | xargs -r cat > answer.txt",
    ],
    ['symlink the answer key', `ln -s ${KEY} answer.txt`],
    [
      'write a reward file of its own',
      'echo 1 > reward.txt; echo \'{"score": 1}\' > score.json; echo 1 > answer.txt',
    ],
  ])('an attack scores 0 through OpenEnv: %s', async (_name, command) => {
    const env = await OpenEnvTestClient.connect(base);
    try {
      observation(await env.reset({ taskId: 'quarterly-revenue' }));
      expect((await env.step({ message: bashMessage('c0', command) })).data['done']).toBe(false);
      const last = await env.step({ message: { role: 'assistant', content: 'done' } });
      expect(last.data).toMatchObject({ done: true, reward: 0 });
      expect((metadata(last)['result'] as { status: string }).status).not.toBe('error');
    } finally {
      await env.disconnect();
    }
  });

  it('honours the seed: two resets with one seed have equal world fingerprints, another seed another', async () => {
    const a = await OpenEnvTestClient.connect(base);
    const b = await OpenEnvTestClient.connect(base);
    try {
      const first = metadata(await a.reset({ taskId: 'roman-numerals', seed: 1234 }));
      const second = metadata(await b.reset({ taskId: 'roman-numerals', seed: 1234 }));
      expect(first['episodeId']).not.toBe(second['episodeId']);
      expect(first['seed']).toBe(1234);
      expect(second['worldFingerprint']).toBe(first['worldFingerprint']);
      // A second reset on one connection cancels the episode before it and makes another.
      const other = metadata(await a.reset({ taskId: 'roman-numerals', seed: 1235 }));
      expect(other['worldFingerprint']).not.toBe(first['worldFingerprint']);
      const state = (await a.state()).data;
      expect(state).toMatchObject({ episode_id: other['episodeId'], step_count: 0, seed: 1235 });
      // A seed the protocol cannot honour is refused, not ignored.
      const refused = await b.reset({ taskId: 'roman-numerals', seed: -1 });
      expect(refused.data).toMatchObject({ code: 'VALIDATION_ERROR', field: 'data.seed' });
      const openEnvName = await b.reset({ taskId: 'roman-numerals', episode_id: 'mine' });
      expect(openEnvName.data).toMatchObject({ code: 'VALIDATION_ERROR', field: 'data.episode_id' });
    } finally {
      await a.disconnect();
      await b.disconnect();
    }
  });

  it('drives a member of a group made over HTTP (reset with its episodeId); one driver at a time', async () => {
    const http1 = createEnvironmentClient({ baseUrl: `http://${t.address}`, token: t.token });
    const group = await http1.createGroup({ taskId: 'quarterly-revenue', size: 2, seed: 99 });
    const [one, two] = group.episodes;
    const a = await OpenEnvTestClient.connect(base);
    const b = await OpenEnvTestClient.connect(base);
    try {
      const attached = metadata(await a.reset({ episodeId: one!.episodeId }));
      expect(attached).toMatchObject({ episodeId: one!.episodeId, groupId: group.groupId, seed: 99 });
      expect(attached['worldFingerprint']).toBe(group.worldFingerprint);
      const taken = await b.reset({ episodeId: one!.episodeId });
      expect(taken.data).toMatchObject({ code: 'EXECUTION_ERROR', reason: 'EPISODE_DRIVEN' });
      const last = await a.step({ message: { role: 'assistant', content: 'nothing to do' } });
      expect(last.data).toMatchObject({ done: true, reward: 0 });
      expect(metadata(last)['result']).toMatchObject({
        groupId: group.groupId,
        worldFingerprint: group.worldFingerprint,
      });
      const gone = await b.reset({ episodeId: one!.episodeId });
      expect(gone.data).toMatchObject({ code: 'SESSION_ERROR', reason: 'EPISODE_NOT_FOUND' });
    } finally {
      await a.disconnect();
      await b.disconnect();
      await http1.cancel(two!.episodeId);
    }
  });

  it('refuses a bad token before upgrading, a browser Origin, and other paths; health answers with the token', async () => {
    await expect(OpenEnvTestClient.connect(`http://${t.address}/openenv/wrong-token`)).rejects.toMatchObject({
      status: 401,
    });
    await expect(OpenEnvTestClient.connect(`http://${t.address}/openenv/${t.token}x`)).rejects.toMatchObject({
      status: 401,
    });
    await expect(OpenEnvTestClient.connect(base, { origin: 'http://evil.example' })).rejects.toMatchObject({
      status: 403,
    });
    const [, port] = t.address.split(':');
    await expect(
      OpenEnvTestClient.connect(base, { origin: `http://127.0.0.1:${Number(port) === 1 ? 2 : 1}` }),
    ).rejects.toMatchObject({ status: 403 });
    // The server's own address as Origin (what Python's websocket-client sends) is allowed.
    const own = await OpenEnvTestClient.connect(base, { origin: `http://${t.address}` });
    expect((await own.state()).type).toBe('state');
    await own.disconnect();
    await expect(OpenEnvTestClient.connect(`http://${t.address}/v1`)).rejects.toMatchObject({ status: 404 });
    const get = (p: string) =>
      new Promise<number>((resolve, reject) => {
        http
          .get(`http://${t.address}${p}`, (res) => {
            res.resume();
            resolve(res.statusCode!);
          })
          .on('error', reject);
      });
    expect(await get(`/openenv/${t.token}/health`)).toBe(200);
    expect(await get('/openenv/wrong/health')).toBe(401);
    expect(await get(`/openenv/${t.token}/ws`)).toBe(426);
  });

  it('malformed frames, unknown types and actions, a step before reset, an unknown tool: error frames, the connection goes on', async () => {
    const env = await OpenEnvTestClient.connect(base);
    try {
      env.sendRaw('{"type": "reset", ');
      expect((await env.next()).data).toMatchObject({ code: 'INVALID_JSON' });
      env.sendRaw('[1, 2]');
      expect((await env.next()).data).toMatchObject({ code: 'VALIDATION_ERROR' });
      env.sendRaw(Buffer.from('{"type": "state"}'));
      expect((await env.next()).data).toMatchObject({ code: 'VALIDATION_ERROR' });
      expect((await env.call('jump')).data).toMatchObject({ code: 'UNKNOWN_TYPE' });
      expect((await env.step({ message: { role: 'assistant', content: 'x' } })).data).toMatchObject({
        code: 'EXECUTION_ERROR',
        reason: 'NO_EPISODE',
      });
      expect((await env.reset({ taskId: 'no-such-task' })).data).toMatchObject({
        code: 'VALIDATION_ERROR',
        reason: 'TASK_NOT_FOUND',
      });
      expect((await env.reset({})).data).toMatchObject({ code: 'VALIDATION_ERROR', field: 'data.taskId' });
      observation(await env.reset({ taskId: 'quarterly-revenue' }));
      expect((await env.step({ message: { role: 'user', content: 'x' } })).data).toMatchObject({
        code: 'VALIDATION_ERROR',
        field: 'data.message.role',
      });
      expect((await env.step({ type: 'teleport' })).data).toMatchObject({
        code: 'VALIDATION_ERROR',
        field: 'data.type',
      });
      const listed = observation(await env.step({ type: 'list_tools' }));
      expect((listed['tools'] as { function: { name: string } }[]).map((x) => x.function.name)).toContain(
        'bash',
      );
      // An unknown tool is the model's mistake: the turn runs and says so in its tool message.
      const unknown = await env.step({ type: 'call_tool', tool_name: 'rm_rf', arguments: {} });
      expect((observation(unknown)['toolMessages'] as { content: string }[])[0]!.content).toMatch(/rm_rf/);
      const called = await env.step({
        type: 'call_tool',
        tool_name: 'bash',
        arguments: { command: 'echo via-call-tool' },
      });
      expect((observation(called)['toolMessages'] as { content: string }[])[0]!.content).toContain(
        'via-call-tool',
      );
      expect((await env.state()).data).toMatchObject({ step_count: 2 });
    } finally {
      await env.disconnect();
    }
  });

  it('an oversized frame closes the connection with 1009 and tears its episode down; the server goes on', async () => {
    const env = await OpenEnvTestClient.connect(base);
    const about = metadata(await env.reset({ taskId: 'quarterly-revenue' }));
    const uid = await uidOf(t, about['episodeId'] as string);
    const sandboxId = sandboxIdOfUid(uid);
    env.sendRaw(
      JSON.stringify({
        type: 'step',
        data: { message: { role: 'assistant', content: 'x'.repeat(300 * 1024) } },
      }),
    );
    expect(await env.closed).toBe(1009);
    // 1009 is not a clean close: the episode waits out the reconnect grace, then goes.
    expect(await eventually(() => leftovers(uid, sandboxId).length === 0, 30_000)).toBe(true);
    const again = await OpenEnvTestClient.connect(base);
    expect((await again.state()).data).toMatchObject({ episode_id: null, step_count: 0 });
    await again.disconnect();
  });

  it('a client that vanishes mid-step: the step completes, a reconnect with the episodeId resumes it and the same turnId runs nothing twice', async () => {
    const env = await OpenEnvTestClient.connect(base);
    const about = metadata(await env.reset({ taskId: 'quarterly-revenue' }));
    const episodeId = about['episodeId'] as string;
    const uid = await uidOf(t, episodeId);
    const slow = bashMessage('c0', 'sleep 1; echo ran >> runs.txt; echo finished-late');
    env.ws.send(JSON.stringify({ type: 'step', data: { message: slow, turnId: 'slow' } }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    env.ws.terminate();
    const back = await OpenEnvTestClient.connect(base);
    try {
      const resumed = observation(await back.reset({ episodeId }));
      expect((resumed['metadata'] as { episodeId: string }).episodeId).toBe(episodeId);
      const again = await back.step({ message: slow, turnId: 'slow' });
      expect((observation(again)['toolMessages'] as { content: string }[])[0]!.content).toContain(
        'finished-late',
      );
      const count = await back.step({ message: bashMessage('c1', 'wc -l < runs.txt') });
      expect((observation(count)['toolMessages'] as { content: string }[])[0]!.content).toMatch(/^1\n/);
      expect((await back.state()).data).toMatchObject({ episode_id: episodeId, step_count: 2 });
    } finally {
      await back.disconnect();
    }
    expect(await eventually(() => leftovers(uid, undefined).length === 0, 30_000)).toBe(true);
  });

  it('a client that vanishes and never comes back: the episode is cancelled after the grace and torn down', async () => {
    const env = await OpenEnvTestClient.connect(base);
    const about = metadata(await env.reset({ taskId: 'quarterly-revenue' }));
    const episodeId = about['episodeId'] as string;
    const uid = await uidOf(t, episodeId);
    const sandboxId = sandboxIdOfUid(uid);
    env.ws.send(
      JSON.stringify({
        type: 'step',
        data: { message: bashMessage('c0', 'sleep 2; echo done-anyway'), turnId: 'x' },
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    env.ws.terminate();
    expect(await eventually(() => leftovers(uid, sandboxId).length === 0, 30_000)).toBe(true);
    const http1 = createEnvironmentClient({ baseUrl: `http://${t.address}`, token: t.token });
    // The step ran to its end before the episode was cancelled.
    expect((await http1.storedTurn(episodeId, 'x')).toolMessages[0]!.content).toContain('done-anyway');
    expect(await http1.finish(episodeId)).toMatchObject({
      status: 'error',
      reward: 0,
      trainable: false,
      error: { code: 'ABORTED' },
    });
  });

  it('a close frame mid-command stops it and tears the episode down at once', async () => {
    const env = await OpenEnvTestClient.connect(base);
    const about = metadata(await env.reset({ taskId: 'quarterly-revenue' }));
    const uid = await uidOf(t, about['episodeId'] as string);
    const sandboxId = sandboxIdOfUid(uid);
    env.ws.send(JSON.stringify({ type: 'step', data: { message: bashMessage('c0', 'sleep 60') } }));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = Date.now();
    expect(await env.disconnect()).toBe(1000);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(leftovers(uid, sandboxId)).toEqual([]);
  });

  it('at capacity a reset is CAPACITY_REACHED, and a student cannot reach the endpoint from its sandbox', async () => {
    const small = await startTestServer({
      maxEpisodes: 1,
      maxConnections: 2,
      taskIds: ['quarterly-revenue'],
    });
    try {
      const smallBase = `http://${small.address}/openenv/${small.token}`;
      const a = await OpenEnvTestClient.connect(smallBase);
      const b = await OpenEnvTestClient.connect(smallBase);
      // Past maxConnections the upgrade itself is refused.
      await expect(OpenEnvTestClient.connect(smallBase)).rejects.toMatchObject({ status: 503 });
      try {
        // taskId left out: the server has one task.
        observation(await a.reset());
        expect((await b.reset()).data).toMatchObject({ code: 'CAPACITY_REACHED', reason: 'AT_CAPACITY' });
        const [, port] = small.address.split(':');
        const probe = await a.step({
          message: bashMessage(
            'c0',
            `(exec 3<>/dev/tcp/127.0.0.1/${port} && printf 'GET /openenv/x/ws HTTP/1.1\\r\\nHost: a\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n' >&3 && cat <&3) 2>&1; echo "exit=$?"`,
          ),
        });
        const text = (observation(probe)['toolMessages'] as { content: string }[])[0]!.content;
        expect(text).toMatch(/Connection refused/);
        expect(text).not.toContain('HTTP/1.');
      } finally {
        await a.disconnect();
        await b.disconnect();
      }
    } finally {
      await small.stop();
    }
  });

  it('a connection that sends nothing for the idle timeout is closed and its episode torn down', async () => {
    const idle = await startTestServer({ idleTimeoutMs: 1_500, taskIds: ['quarterly-revenue'] });
    try {
      const env = await OpenEnvTestClient.connect(`http://${idle.address}/openenv/${idle.token}`);
      const about = metadata(await env.reset());
      const uid = await uidOf(idle, about['episodeId'] as string);
      const sandboxId = sandboxIdOfUid(uid);
      expect(await env.closed).toBe(1000);
      expect(await eventually(() => leftovers(uid, sandboxId).length === 0, 20_000)).toBe(true);
    } finally {
      await idle.stop();
    }
  });

  it('closing the server with a live connection tears its episode down and closes the socket (1001)', async () => {
    const own = await startTestServer({ taskIds: ['quarterly-revenue'] });
    const env = await OpenEnvTestClient.connect(`http://${own.address}/openenv/${own.token}`);
    const about = metadata(await env.reset());
    const uid = await uidOf(own, about['episodeId'] as string);
    const sandboxId = sandboxIdOfUid(uid);
    await own.stop();
    expect(await env.closed).toBe(1001);
    expect(leftovers(uid, sandboxId)).toEqual([]);
  });
});
