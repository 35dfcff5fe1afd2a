// The MCP endpoint of `karotte serve` (contract section 15): `/v1/episodes/{id}/mcp`, an MCP
// server over Streamable HTTP (the official TypeScript SDK's transport) offering that episode's
// tools, behind the same bearer token. The episode id (`ep_<random UUID>`) in the path is the
// capability: a session of one episode can reach no other. A `tools/call` is one turn of the
// episode (one assistant message with that one tool call), so it runs as the student, is
// recorded in the transcript and counts against the episode's turns and wall time.
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { parseJsonStrict } from '@karotte/base';
import type { AssistantMessage } from '@karotte/core';
import { HttpProblem, readBody, sendJson } from './http.js';
import type { Session } from './session.js';
import { version } from './version.js';

/**
 * An MCP transport of the official TypeScript SDK (its `Transport`, e.g. `StdioServerTransport`
 * of `@modelcontextprotocol/sdk/server/stdio.js`), by what the server uses of it. Declared here
 * so this package's own types do not load the SDK's, which need the DOM library's `HeadersInit`
 * and do not compile for a Node.js project without it.
 */
export interface McpTransport {
  start(): Promise<void>;
  send(message: unknown, options?: unknown): Promise<void>;
  close(): Promise<void>;
  onclose?(): void;
  onerror?(error: Error): void;
  onmessage?(message: unknown, extra?: unknown): void;
  sessionId?: string | undefined;
}

/** MCP sessions one episode may hold at once; the oldest is closed to make room. */
export const MAX_MCP_SESSIONS_PER_EPISODE = 8;

/** The `_meta` key of a tools/call that names its call across sessions (an idempotency key). */
export const MCP_CALL_ID_META = 'io.karotte/callId';

const JSON_LIMITS = { maxDepth: 64, maxStringLength: 16 * 1024 * 1024 };

interface McpSession {
  readonly episodeId: string;
  readonly transport: Transport;
  /** The transport again when it is a Streamable HTTP session (reached by its Mcp-Session-Id). */
  readonly http: StreamableHTTPServerTransport | undefined;
  readonly server: McpServer;
}

export interface McpEndpoint {
  /** Answer one request to `/v1/episodes/{id}/mcp` (authorized already) for `session`. */
  handle(session: Session, req: IncomingMessage, res: ServerResponse): Promise<void>;
  /**
   * Serve `session`'s tools on a transport of the caller's (stdio pipes of an agent the harness
   * started: `new StdioServerTransport(agent.stdout, agent.stdin)`); closed with the episode.
   */
  connect(session: Session, transport: McpTransport): Promise<void>;
  /** Close the MCP sessions of an episode (it was finished or cancelled). */
  closeEpisode(episodeId: string): void;
  /** Close every MCP session. */
  close(): Promise<void>;
}

function toolError(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** The endpoint; one per server. */
export function createMcpEndpoint(options: { readonly maxBodyBytes: number }): McpEndpoint {
  const sessions = new Map<string, McpSession>();

  /**
   * An MCP server of `session`'s tools. `scope` names calls when the transport has no session
   * id (stdio: one connection is one scope).
   */
  function serverFor(session: Session, scope: string): McpServer {
    const episode = session.episode!;
    // Tools are fixed when the episode is created: the profile's, listed as they are.
    const tools = episode.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: { type: 'object' as const, ...tool.parameters },
    }));
    const names = new Set(tools.map((t) => t.name));
    // The low-level handlers of the SDK's server: the profile's JSON Schemas are offered as they
    // are (McpServer's registerTool wants zod schemas), and nothing can be registered later.
    const mcpServer = new McpServer(
      { name: `karotte-episode-${session.init.taskId}`, version },
      { capabilities: { tools: { listChanged: false } } },
    );
    const server = mcpServer.server;
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
      const { name } = request.params;
      if (!names.has(name))
        return toolError(
          `unknown tool ${JSON.stringify(name).slice(0, 300)}: this episode offers ${[...names].join(', ')}`,
        );
      const given = request.params._meta?.[MCP_CALL_ID_META];
      // Exactly once: a call is named by its JSON-RPC id within its MCP session (MCP forbids a
      // client to reuse an id in a session, a reconnect included), or by the call id it gives.
      const key =
        typeof given === 'string' && given !== ''
          ? `meta:${given}`
          : `rpc:${extra.sessionId ?? scope}:${typeof extra.requestId}:${String(extra.requestId)}`;
      const digest = createHash('sha256').update(key).digest('hex').slice(0, 32);
      const message: AssistantMessage = {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: `mcp_${digest.slice(0, 24)}`,
            type: 'function',
            function: { name, arguments: JSON.stringify(request.params.arguments ?? {}) },
          },
        ],
      };
      try {
        const answer = await session.turn({ turnId: `mcp-${digest}`, message });
        const content = answer.toolMessages[0]?.content ?? '';
        const parts: CallToolResult['content'] =
          typeof content === 'string'
            ? [{ type: 'text', text: content }]
            : content.map((part) =>
                part['type'] === 'image'
                  ? {
                      type: 'image' as const,
                      data: String(part['dataBase64']),
                      mimeType: String(part['mediaType']),
                    }
                  : { type: 'text' as const, text: typeof part['text'] === 'string' ? part['text'] : '' },
              );
        return {
          content: parts,
          isError: false,
          _meta: {
            'io.karotte/turnIndex': answer.turnIndex,
            'io.karotte/done': answer.done,
            'io.karotte/remaining': session.remaining(),
          },
        };
      } catch (error) {
        // The episode refused (done, finished, a conflicting call id): a tool error, never a crash.
        const code = error instanceof HttpProblem ? `${error.code}: ` : '';
        return toolError(`${code}${error instanceof Error ? error.message : String(error)}`);
      }
    });
    return mcpServer;
  }

  async function closeSession(id: string): Promise<void> {
    const found = sessions.get(id);
    if (found === undefined) return;
    sessions.delete(id);
    await found.transport.close().catch(() => undefined);
    await found.server.close().catch(() => undefined);
  }

  return {
    async handle(session, req, res) {
      const method = req.method ?? 'GET';
      if (session.finished) {
        req.resume();
        throw new HttpProblem(
          404,
          'EPISODE_FINISHED',
          `episode ${session.id} is finished: its tools are gone`,
        );
      }
      let body: unknown;
      if (method === 'POST') {
        const text = await readBody(req, options.maxBodyBytes);
        const parsed = parseJsonStrict(text, JSON_LIMITS);
        if (!parsed.ok) {
          sendJson(res, 400, {
            jsonrpc: '2.0',
            id: null,
            error: { code: -32700, message: `Parse error: ${parsed.reason}` },
          });
          return;
        }
        body = parsed.value;
      } else {
        req.resume();
      }
      const header = req.headers['mcp-session-id'];
      const sessionId = typeof header === 'string' ? header : undefined;
      if (sessionId !== undefined) {
        const found = sessions.get(sessionId);
        // A session of another episode is no session of this one.
        if (found?.http === undefined || found.episodeId !== session.id) {
          sendJson(res, 404, {
            jsonrpc: '2.0',
            id: null,
            error: { code: -32001, message: 'Session not found' },
          });
          return;
        }
        session.touch();
        await found.http.handleRequest(req, res, body);
        return;
      }
      if (method !== 'POST') {
        sendJson(res, 400, {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32000, message: 'Bad Request: no Mcp-Session-Id: initialize first (POST)' },
        });
        return;
      }
      // A new MCP session of this episode (the transport refuses anything but initialize).
      const own = [...sessions.entries()].filter(([, s]) => s.episodeId === session.id);
      if (own.length >= MAX_MCP_SESSIONS_PER_EPISODE) await closeSession(own[0]![0]);
      const server = serverFor(session, 'http');
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        // Answers as JSON, not an SSE stream: a tools/call is one request and one answer.
        enableJsonResponse: true,
        onsessioninitialized: (id) => {
          sessions.set(id, { episodeId: session.id, transport, http: transport, server });
        },
        onsessionclosed: (id) => {
          void closeSession(id);
        },
      });
      await server.connect(transport);
      session.touch();
      await transport.handleRequest(req, res, body);
      if (transport.sessionId === undefined) {
        // Not an initialize: nothing to keep.
        await transport.close().catch(() => undefined);
        await server.close().catch(() => undefined);
      }
    },
    async connect(session, transport) {
      const id = `own-${randomUUID()}`;
      const server = serverFor(session, id);
      // The caller's transport is the SDK's own (McpTransport only spells out its shape).
      const sdkTransport = transport as Transport;
      sessions.set(id, { episodeId: session.id, transport: sdkTransport, http: undefined, server });
      await server.connect(sdkTransport);
      // The SDK's server chains its own onclose; the entry goes when the transport closes.
      const chained = sdkTransport.onclose;
      sdkTransport.onclose = () => {
        sessions.delete(id);
        chained?.();
      };
      session.touch();
    },
    closeEpisode(episodeId) {
      for (const [id, s] of sessions) if (s.episodeId === episodeId) void closeSession(id);
    },
    async close() {
      await Promise.all([...sessions.keys()].map((id) => closeSession(id)));
    },
  };
}
