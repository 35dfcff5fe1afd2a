// The MCP endpoint of an episode (contract section 15) driven by the official TypeScript SDK's
// Client over its StreamableHTTPClientTransport, against a real server: real sandboxes as the
// student, real graders. Needs root.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createEnvironmentClient, type EnvironmentClient } from './client.js';
import { MCP_CALL_ID_META } from './mcp.js';
import {
  eventually,
  examples,
  leftovers,
  OpenEnvTestClient,
  replayOf,
  sandboxIdOfUid,
  sandboxUidOf,
  startTestServer,
  type TestServer,
} from '../test/protocols.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI) console.log('[karotte] MCP integration tests skipped: they need root (real sandboxes)');

const KEY = path.join(examples, 'quarterly-revenue', 'hidden', 'expected_total_cents.txt');

interface TextResult {
  content: { type: string; text: string }[];
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

describe.skipIf(!isRoot && !inCI)('the MCP endpoint of an episode', () => {
  let t: TestServer;
  let http1: EnvironmentClient;
  beforeAll(async () => {
    t = await startTestServer({ maxEpisodes: 4 });
    http1 = createEnvironmentClient({ baseUrl: `http://${t.address}`, token: t.token });
  });
  afterAll(async () => {
    await t.stop();
    expect(t.server.liveEpisodes).toBe(0);
  });

  function transportOf(
    episodeId: string,
    token = t.token,
    sessionId?: string,
  ): StreamableHTTPClientTransport {
    return new StreamableHTTPClientTransport(new URL(`http://${t.address}/v1/episodes/${episodeId}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      ...(sessionId === undefined ? {} : { sessionId }),
    });
  }

  async function connect(
    episodeId: string,
  ): Promise<{ mcp: Client; transport: StreamableHTTPClientTransport }> {
    const mcp = new Client({ name: 'karotte-test', version: '1.0.0' });
    const transport = transportOf(episodeId);
    await mcp.connect(transport);
    return { mcp, transport };
  }

  const uidOf = (episodeId: string): Promise<number> => sandboxUidOf(t, episodeId);

  it('lists the episode’s tools and solves quarterly-revenue with tools/call (reward 1); every call is a turn of the transcript', async () => {
    const episode = await http1.createEpisode({ taskId: 'quarterly-revenue', seed: 3 });
    const uid = await uidOf(episode.episodeId);
    const sandboxId = sandboxIdOfUid(uid);
    const { mcp } = await connect(episode.episodeId);
    try {
      const { tools } = await mcp.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(
        episode.tools.map((tool) => (tool['function'] as { name: string }).name),
      );
      const bash = tools.find((tool) => tool.name === 'bash')!;
      expect(bash.inputSchema).toMatchObject({
        type: 'object',
        properties: { command: expect.anything() as unknown },
      });
      const control = replayOf(path.join(examples, 'quarterly-revenue', 'control.json'));
      const calls = control.flatMap(
        (m) => (m['tool_calls'] as { function: { name: string; arguments: string } }[] | undefined) ?? [],
      );
      const texts: string[] = [];
      for (const call of calls) {
        const result = (await mcp.callTool({
          name: call.function.name,
          arguments: JSON.parse(call.function.arguments) as Record<string, unknown>,
        })) as TextResult;
        expect(result.isError).toBe(false);
        texts.push(result.content[0]!.text);
      }
      expect(texts[1]).toMatch(/^\d+\n/);
      const whoami = (await mcp.callTool({ name: 'bash', arguments: { command: 'id -u' } })) as TextResult;
      expect(whoami.content[0]!.text).toMatch(new RegExp(`^${uid}\\n`));
      expect(whoami._meta).toMatchObject({ 'io.karotte/turnIndex': 2, 'io.karotte/done': false });
    } finally {
      await mcp.close();
    }
    const result = await http1.finish(episode.episodeId);
    expect(result).toMatchObject({ status: 'passed', reward: 1, blame: 'none', seed: 3 });
    expect(result.turnLog).toHaveLength(3);
    const events = [];
    for await (const event of http1.events(episode.episodeId)) events.push(event.type);
    expect(events.filter((type) => type === 'tool_call')).toHaveLength(3);
    expect(leftovers(uid, sandboxId)).toEqual([]);
  });

  it('an attack through MCP scores 0: the answer key by path and by find', async () => {
    const episode = await http1.createEpisode({ taskId: 'quarterly-revenue' });
    const { mcp } = await connect(episode.episodeId);
    try {
      for (const command of [
        `cat ${KEY} > answer.txt`,
        "find / -name 'expected_total_cents*' 2>/dev/null | head -n 1 | xargs -r cat >> answer.txt",
      ])
        expect(((await mcp.callTool({ name: 'bash', arguments: { command } })) as TextResult).isError).toBe(
          false,
        );
    } finally {
      await mcp.close();
    }
    const result = await http1.finish(episode.episodeId);
    expect(result.status, JSON.stringify(result.error)).not.toBe('error');
    expect(result.reward).toBe(0);
  });

  it('exactly once: a call id given in _meta runs once across two MCP sessions; a reconnect to the same session keeps its ids', async () => {
    const episode = await http1.createEpisode({ taskId: 'quarterly-revenue' });
    const count = { name: 'bash', arguments: { command: 'echo once >> count.txt; wc -l < count.txt' } };
    const first = await connect(episode.episodeId);
    const second = await connect(episode.episodeId);
    try {
      const a = (await first.mcp.callTool({
        ...count,
        _meta: { [MCP_CALL_ID_META]: 'count-1' },
      })) as TextResult;
      const b = (await second.mcp.callTool({
        ...count,
        _meta: { [MCP_CALL_ID_META]: 'count-1' },
      })) as TextResult;
      expect(b.content).toEqual(a.content);
      expect(a.content[0]!.text).toMatch(/^1\n/);
      // The same call id with other arguments is refused as a tool error, not run.
      const conflict = (await second.mcp.callTool({
        name: 'bash',
        arguments: { command: 'echo other' },
        _meta: { [MCP_CALL_ID_META]: 'count-1' },
      })) as TextResult;
      expect(conflict.isError).toBe(true);
      expect(conflict.content[0]!.text).toMatch(/TURN_CONFLICT/);
      // A JSON-RPC request sent again in its session (a retry after a lost answer) runs nothing again.
      const sessionId = first.transport.sessionId!;
      const rpc = {
        jsonrpc: '2.0',
        id: 'retry-7',
        method: 'tools/call',
        params: { name: 'bash', arguments: { command: 'echo again >> count.txt; wc -l < count.txt' } },
      };
      const post = async () => {
        const res = await fetch(`http://${t.address}/v1/episodes/${episode.episodeId}/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${t.token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': sessionId,
            'mcp-protocol-version': first.transport.protocolVersion ?? '2025-06-18',
          },
          body: JSON.stringify(rpc),
        });
        return (await res.json()) as { result: TextResult };
      };
      const once = await post();
      const twice = await post();
      expect(twice.result.content).toEqual(once.result.content);
      expect(once.result.content[0]!.text).toMatch(/^2\n/);
      // A reconnect to the same session (a new transport given its id) goes on in it.
      const back = new Client({ name: 'karotte-test', version: '1.0.0' });
      await back.connect(transportOf(episode.episodeId, t.token, sessionId));
      const listed = await back.listTools();
      expect(listed.tools.map((tool) => tool.name)).toContain('bash');
      const check = (await back.callTool({
        name: 'bash',
        arguments: { command: 'wc -l < count.txt' },
      })) as TextResult;
      expect(check.content[0]!.text).toMatch(/^2\n/);
      await back.close();
    } finally {
      await first.mcp.close();
      await second.mcp.close();
      await http1.cancel(episode.episodeId);
    }
  });

  it('errors are tool errors or HTTP refusals, never a crash: unknown tool, a done episode, no token, another episode’s session, a finished episode', async () => {
    const episode = await http1.createEpisode({ taskId: 'quarterly-revenue', maxTurns: 1 });
    const other = await http1.createEpisode({ taskId: 'roman-numerals' });
    const { mcp, transport } = await connect(episode.episodeId);
    try {
      const unknown = (await mcp.callTool({ name: 'rm_rf', arguments: {} })) as TextResult;
      expect(unknown.isError).toBe(true);
      expect(unknown.content[0]!.text).toMatch(/unknown tool "rm_rf"/);
      // The turn budget counts MCP calls: one turn, then the episode is done.
      const first = (await mcp.callTool({ name: 'bash', arguments: { command: 'echo 1' } })) as TextResult;
      expect(first._meta).toMatchObject({ 'io.karotte/done': true });
      const late = (await mcp.callTool({ name: 'bash', arguments: { command: 'echo 2' } })) as TextResult;
      expect(late.isError).toBe(true);
      expect(late.content[0]!.text).toMatch(/EPISODE_DONE/);
      // Without the bearer token: 401 before anything of MCP.
      const stranger = new Client({ name: 'karotte-test', version: '1.0.0' });
      await expect(stranger.connect(transportOf(episode.episodeId, 'wrong-token'))).rejects.toMatchObject({
        code: 401,
        message: expect.stringMatching(/UNAUTHORIZED/) as unknown,
      });
      // This episode's session id on another episode's path is no session there.
      const res = await fetch(`http://${t.address}/v1/episodes/${other.episodeId}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${t.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': transport.sessionId!,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).toBe(404);
      const huge = await fetch(`http://${t.address}/v1/episodes/${other.episodeId}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
        body: `{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "pad": "${'x'.repeat(5 * 1024 * 1024)}"}`,
      });
      expect([huge.status, ((await huge.json()) as { error: { code: string } }).error.code]).toEqual([
        413,
        'BODY_TOO_LARGE',
      ]);
      const malformed = await fetch(`http://${t.address}/v1/episodes/${other.episodeId}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
        body: '{"jsonrpc": ',
      });
      expect([
        malformed.status,
        ((await malformed.json()) as { error: { code: number } }).error.code,
      ]).toEqual([400, -32700]);
    } finally {
      await mcp.close();
    }
    await http1.finish(episode.episodeId);
    const gone = await fetch(`http://${t.address}/v1/episodes/${episode.episodeId}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(gone.status).toBe(404);
    // The server is still well.
    expect((await http1.tasks()).tasks).toHaveLength(2);
    await http1.cancel(other.episodeId);
  });

  it('a student cannot reach the MCP endpoint (nor the OpenEnv one) from inside its sandbox', async () => {
    const episode = await http1.createEpisode({ taskId: 'quarterly-revenue' });
    const { mcp } = await connect(episode.episodeId);
    try {
      const [, port] = t.address.split(':');
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      const probe = (await mcp.callTool({
        name: 'bash',
        arguments: {
          command: [
            `(exec 3<>/dev/tcp/127.0.0.1/${port} && printf 'POST /v1/episodes/${episode.episodeId}/mcp HTTP/1.1\\r\\nHost: a\\r\\nContent-Length: ${body.length}\\r\\n\\r\\n%s' '${body}' >&3 && cat <&3) 2>&1; echo "exit=$?"`,
            `python3 -c 'import socket; s=socket.create_connection(("127.0.0.1", ${port}), 2); print("connected")' 2>&1 | tail -n 1`,
          ].join('; '),
        },
      })) as TextResult;
      const text = probe.content[0]!.text;
      expect(text).toMatch(/Connection refused/);
      expect(text).toMatch(/ConnectionRefusedError|OSError|Network is unreachable/);
      expect(text).not.toContain('HTTP/1.');
      expect(text).not.toMatch(/^connected$/m);
    } finally {
      await mcp.close();
      await http1.cancel(episode.episodeId);
    }
  });

  it('over stdio: an agent process the harness started takes the episode’s tools on its own stdin and stdout (no port)', async () => {
    const episode = await http1.createEpisode({ taskId: 'quarterly-revenue' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-mcp-stdio-'));
    try {
      // The agent: the SDK's Client over the line-delimited JSON-RPC of MCP's stdio, on its own
      // stdin and stdout (the SDK's stdio transport class frames both directions alike).
      const sdk = createRequire(import.meta.url);
      const agent = path.join(dir, 'agent.mjs');
      fs.writeFileSync(
        agent,
        [
          `import { Client } from ${JSON.stringify(pathToFileURL(sdk.resolve('@modelcontextprotocol/sdk/client/index.js')).href)};`,
          `import { StdioServerTransport as LineTransport } from ${JSON.stringify(pathToFileURL(sdk.resolve('@modelcontextprotocol/sdk/server/stdio.js')).href)};`,
          "const client = new Client({ name: 'karotte-stdio-agent', version: '1.0.0' });",
          'await client.connect(new LineTransport(process.stdin, process.stdout));',
          'const { tools } = await client.listTools();',
          "const first = await client.callTool({ name: 'bash', arguments: { command: 'echo from-stdio > note.txt; id -un; cat note.txt' } });",
          "const unknown = await client.callTool({ name: 'nope', arguments: {} });",
          'process.stderr.write(JSON.stringify({ tools: tools.map((t) => t.name), first, unknown }) + "\\n");',
          'await client.close();',
        ].join('\n'),
      );
      const child = spawn(process.execPath, [agent], {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { PATH: '/usr/bin:/bin' },
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      await t.server.connectMcp(episode.episodeId, new StdioServerTransport(child.stdout, child.stdin));
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      expect(await exited, stderr).toBe(0);
      clearTimeout(timer);
      const report = JSON.parse(stderr.trim().split('\n').at(-1)!) as {
        tools: string[];
        first: TextResult;
        unknown: TextResult;
      };
      expect(report.tools).toContain('bash');
      expect(report.first.isError).toBe(false);
      expect(report.first.content[0]!.text).toMatch(/^student\nfrom-stdio\n/);
      expect(report.unknown.isError).toBe(true);
      // The call was a turn of the episode: its file is in the student's world.
      const check = await http1.turn(episode.episodeId, {
        turnId: 'check',
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'c',
              type: 'function',
              function: { name: 'bash', arguments: '{"command": "cat note.txt"}' },
            },
          ],
        },
      });
      expect(check.toolMessages[0]!.content).toMatch(/^from-stdio\n/);
      expect(check.turnIndex).toBe(1);
      await expect(
        t.server.connectMcp('ep_none', new StdioServerTransport(child.stdout, child.stdin)),
      ).rejects.toMatchObject({
        code: 'UNKNOWN_EPISODE',
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await http1.cancel(episode.episodeId);
    }
  });

  it('on a unix socket (mode 0600): MCP (JSON-RPC over HTTP on the socket) and OpenEnv (ws+unix) both work', async () => {
    const own = await startTestServer({ socket: true, taskIds: ['quarterly-revenue'] });
    try {
      expect(fs.statSync(own.address).mode & 0o777).toBe(0o600);
      const post = (p: string, body: unknown, headers: Record<string, string> = {}) =>
        new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
          (resolve, reject) => {
            const text = JSON.stringify(body);
            const req = http.request(
              {
                socketPath: own.address,
                method: 'POST',
                path: p,
                headers: {
                  authorization: `Bearer ${own.token}`,
                  'content-type': 'application/json',
                  accept: 'application/json, text/event-stream',
                  'content-length': Buffer.byteLength(text),
                  ...headers,
                },
              },
              (res) => {
                let out = '';
                res.on('data', (c: Buffer) => (out += c.toString('utf8')));
                res.on('end', () => {
                  resolve({ status: res.statusCode!, headers: res.headers, body: out });
                });
              },
            );
            req.on('error', reject);
            req.end(text);
          },
        );
      const created = await post('/v1/episodes', { taskId: 'quarterly-revenue' });
      const episodeId = (JSON.parse(created.body) as { episodeId: string }).episodeId;
      const mcpPath = `/v1/episodes/${episodeId}/mcp`;
      const init = await post(mcpPath, {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'karotte-test', version: '1' },
        },
      });
      expect(init.status).toBe(200);
      const session = {
        'mcp-session-id': String(init.headers['mcp-session-id']),
        'mcp-protocol-version': '2025-06-18',
      };
      expect(
        (await post(mcpPath, { jsonrpc: '2.0', method: 'notifications/initialized' }, session)).status,
      ).toBe(202);
      const called = await post(
        mcpPath,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'bash', arguments: { command: 'echo over-the-socket' } },
        },
        session,
      );
      expect((JSON.parse(called.body) as { result: TextResult }).result.content[0]!.text).toMatch(
        /^over-the-socket\n/,
      );
      await post(`/v1/episodes/${episodeId}/finish`, {});
      const env = await OpenEnvTestClient.connect(`ws+unix://${own.address}:/openenv/${own.token}`);
      const reset = await env.reset();
      expect(reset.type).toBe('observation');
      const step = await env.step({
        type: 'call_tool',
        tool_name: 'bash',
        arguments: { command: 'echo ws-on-the-socket' },
      });
      expect(
        ((step.data['observation'] as Record<string, unknown>)['toolMessages'] as { content: string }[])[0]!
          .content,
      ).toMatch(/^ws-on-the-socket\n/);
      expect(await env.disconnect()).toBe(1000);
    } finally {
      await own.stop();
    }
  });

  it('an episode holds at most 8 MCP sessions: a ninth closes the oldest', async () => {
    const episode = await http1.createEpisode({ taskId: 'quarterly-revenue' });
    const clients: Client[] = [];
    try {
      for (let i = 0; i < 9; i++) clients.push((await connect(episode.episodeId)).mcp);
      await expect(clients[0]!.listTools()).rejects.toThrow();
      for (const c of clients.slice(1))
        expect((await c.listTools()).tools.map((x) => x.name)).toContain('bash');
    } finally {
      for (const c of clients) await c.close().catch(() => undefined);
      await http1.cancel(episode.episodeId);
    }
  });

  it('cancelling the episode closes its MCP sessions and leaves nothing of its sandbox', async () => {
    const episode = await http1.createEpisode({ taskId: 'quarterly-revenue' });
    const uid = await uidOf(episode.episodeId);
    const sandboxId = sandboxIdOfUid(uid);
    const { mcp } = await connect(episode.episodeId);
    const running = mcp
      .callTool({ name: 'bash', arguments: { command: 'sleep 60' } })
      .catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await http1.cancel(episode.episodeId);
    const started = Date.now();
    // The call in flight is answered (the command was stopped), not left to the client's timeout.
    const answer = (await running) as TextResult;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(answer.content[0]!.text).toMatch(/stopped|cancel|abort|exit code/i);
    expect(await eventually(() => leftovers(uid, sandboxId).length === 0, 20_000)).toBe(true);
    await expect(mcp.listTools()).rejects.toThrow();
    await mcp.close();
  });
});
