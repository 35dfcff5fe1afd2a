// Every attack of the red-team catalog's answer-key-theft and network classes, replayed through
// an episode's MCP endpoint of `karotte serve` (each tool call of the attack a `tools/call` of
// the official MCP SDK's Client over Streamable HTTP), then the episode finished over HTTP: each
// must score 0 and none may turn its episode into `error`. MCP is one more way to drive an
// episode's tools; it must not be a way around a defense. Both examples are solved through it
// too. The SDK is @karotte/server's dependency, so it is resolved from there.
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnvironmentClient } from '@karotte/server';
import { ATTACKS } from '../src/redteam/catalog.js';
import { attackReplay } from '../src/redteam/replay.js';
import { examples, leftoversOfUid, replayOf, startServe, type Served } from './serve-support.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI)
  console.log('[karotte] MCP catalog integration tests skipped: they need root (real sandboxes)');

const fromServer = createRequire(
  path.resolve(import.meta.dirname, '..', '..', '..', 'packages', 'server', 'package.json'),
);
const { Client } = (await import(fromServer.resolve('@modelcontextprotocol/sdk/client/index.js'))) as {
  Client: new (info: { name: string; version: string }) => McpClient;
};
const { StreamableHTTPClientTransport } = (await import(
  fromServer.resolve('@modelcontextprotocol/sdk/client/streamableHttp.js')
)) as { StreamableHTTPClientTransport: new (url: URL, options: unknown) => unknown };

interface McpClient {
  connect(transport: unknown): Promise<void>;
  callTool(request: { name: string; arguments: Record<string, unknown> }): Promise<{
    content: { type: string; text: string }[];
    isError?: boolean;
  }>;
  close(): Promise<void>;
}

const CLASSES = new Set(['answer-key-theft', 'network']);
const attacks = ATTACKS.filter(
  (attack) =>
    CLASSES.has(attack.class) &&
    attack.requires === undefined &&
    (attack.languages.includes('any') || attack.languages.includes('javascript')),
);

interface Call {
  function: { name: string; arguments: string };
}

describe.skipIf(!isRoot && !inCI)('the catalog and the examples through MCP', () => {
  let served: Served;
  let client: EnvironmentClient;
  beforeAll(async () => {
    served = await startServe(['--max-episodes', '4']);
    client = served.client();
  });
  afterAll(async () => {
    expect(await served.stop()).toBe(0);
  });

  /** Run every tool call of `messages` as an MCP tools/call on a fresh episode of `taskId`; finish it. */
  async function throughMcp(taskId: string, messages: readonly Record<string, unknown>[]) {
    const episode = await client.createEpisode({ taskId });
    const mcp = new Client({ name: 'karotte-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(
        new URL(`http://${served.address}/v1/episodes/${episode.episodeId}/mcp`),
        {
          requestInit: { headers: { authorization: `Bearer ${served.token}` } },
        },
      ),
    );
    try {
      for (const message of messages) {
        for (const call of (message['tool_calls'] as Call[] | undefined) ?? []) {
          const result = await mcp.callTool({
            name: call.function.name,
            arguments: JSON.parse(call.function.arguments) as Record<string, unknown>,
          });
          expect(result.isError).toBe(false);
        }
      }
    } finally {
      await mcp.close();
    }
    return client.finish(episode.episodeId);
  }

  it.each(['quarterly-revenue', 'roman-numerals'])(
    '%s: its control solves it through MCP (reward 1)',
    async (taskId) => {
      const result = await throughMcp(taskId, replayOf(path.join(examples, taskId, 'control.json')));
      expect(result).toMatchObject({ status: 'passed', reward: 1, blame: 'none' });
      expect(leftoversOfUid(result.sandbox.uid!)).toEqual([]);
    },
  );

  it('holds at least ten attacks of the two classes', () => {
    expect(attacks.length).toBeGreaterThanOrEqual(10);
  });

  it.each(attacks.map((attack) => [attack.id, attack] as const))(
    '%s scores 0 through MCP, never error',
    async (_id, attack) => {
      const result = await throughMcp(
        'quarterly-revenue',
        attackReplay(attack, 'answer.txt') as unknown as Record<string, unknown>[],
      );
      expect(result.status, JSON.stringify(result.error)).not.toBe('error');
      expect(result.score).toBe(0);
      expect(result.blame).not.toBe('infra');
      expect(leftoversOfUid(result.sandbox.uid!)).toEqual([]);
    },
    120_000,
  );
});
