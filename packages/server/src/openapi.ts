// The OpenAPI 3.1 document of the protocol, generated from the zod schemas that validate the
// requests (schemas.ts). `openapi.json` in the package is this document as JSON; a unit test
// keeps the two equal (`pnpm --filter @karotte/server openapi` rewrites the file).
import { z } from 'zod';
import {
  capabilitiesSchema,
  createEpisodeRequestSchema,
  createGroupRequestSchema,
  episodeCreatedSchema,
  episodeResultSchema,
  errorBodySchema,
  eventSchema,
  finishRequestSchema,
  groupCreatedSchema,
  PROTOCOL_VERSION,
  rolloutSchema,
  runRequestSchema,
  tasksResponseSchema,
  turnAnswerSchema,
  turnRequestSchema,
} from './schemas.js';

type Schema = z.ZodType;

interface Operation {
  readonly summary: string;
  readonly body?: Schema;
  /** Status → answer schema (null: no body). */
  readonly answers: Readonly<Record<string, Schema | null>>;
  readonly episodeId?: boolean;
  readonly query?: readonly { name: string; description: string }[];
  readonly sse?: boolean;
  /** No bearer token: the path's token stands for it. */
  readonly tokenInPath?: boolean;
}

/** A JSON-RPC 2.0 message of MCP (the SDK's transport validates it further). */
const jsonRpcMessageSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number().int()]).optional(),
    method: z.string().optional(),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .catchall(z.unknown())
  .meta({ title: 'JsonRpcMessage' });

const healthSchema = z
  .object({ status: z.literal('healthy') })
  .strict()
  .meta({ title: 'Health' });

const ROUTES: Readonly<Record<string, Readonly<Record<string, Operation>>>> = {
  '/v1/capabilities': {
    get: { summary: 'What this server offers', answers: { '200': capabilitiesSchema } },
  },
  '/v1/tasks': {
    get: { summary: 'The tasks served (no grader data)', answers: { '200': tasksResponseSchema } },
  },
  '/v1/episodes': {
    post: {
      summary: 'Create an episode: its sandbox is built and its first messages returned',
      body: createEpisodeRequestSchema,
      answers: { '201': episodeCreatedSchema, '404': errorBodySchema, '503': errorBodySchema },
    },
  },
  '/v1/groups': {
    post: {
      summary:
        'Create a group of episodes of one task from one seed; every member has the same world fingerprint',
      body: createGroupRequestSchema,
      answers: { '201': groupCreatedSchema, '404': errorBodySchema, '503': errorBodySchema },
    },
  },
  '/v1/episodes/{id}/turns': {
    post: {
      summary:
        'Send one assistant message; its tool calls run in order as the student (exactly once per turnId)',
      body: turnRequestSchema,
      episodeId: true,
      answers: { '200': turnAnswerSchema, '404': errorBodySchema, '409': errorBodySchema },
    },
  },
  '/v1/episodes/{id}/turns/{turnId}': {
    get: {
      summary: 'The stored answer of a turn (waits for a turn still running)',
      episodeId: true,
      answers: { '200': turnAnswerSchema, '404': errorBodySchema },
    },
  },
  '/v1/episodes/{id}/finish': {
    post: {
      summary:
        'End the episode, collect, grade and tear down; returns the result (the same again when repeated)',
      body: finishRequestSchema,
      episodeId: true,
      answers: { '200': episodeResultSchema, '404': errorBodySchema },
    },
  },
  '/v1/episodes/{id}/run': {
    post: {
      summary:
        'Karotte drives the model itself until the episode is done, then finishes it; returns the rollout',
      body: runRequestSchema,
      episodeId: true,
      answers: { '200': rolloutSchema, '404': errorBodySchema, '409': errorBodySchema },
    },
  },
  '/v1/episodes/{id}/events': {
    get: {
      summary: 'The episode’s events as server-sent events, from a sequence number on (resumable)',
      episodeId: true,
      sse: true,
      query: [
        {
          name: 'from',
          description: 'first sequence number to send (default 0); Last-Event-ID resumes after its id',
        },
      ],
      answers: { '200': eventSchema, '404': errorBodySchema },
    },
  },
  '/v1/episodes/{id}/mcp': {
    post: {
      summary:
        'The episode’s MCP server (Streamable HTTP, contract section 15): initialize, tools/list, tools/call (one turn each, exactly once per JSON-RPC id in a session); Mcp-Session-Id after initialize',
      body: jsonRpcMessageSchema,
      episodeId: true,
      answers: { '200': jsonRpcMessageSchema, '404': errorBodySchema },
    },
    get: {
      summary: 'The MCP session’s server-sent event stream (Mcp-Session-Id)',
      episodeId: true,
      sse: true,
      answers: { '200': jsonRpcMessageSchema, '404': errorBodySchema },
    },
    delete: {
      summary: 'End the MCP session (Mcp-Session-Id); the episode goes on',
      episodeId: true,
      answers: { '200': null, '404': errorBodySchema },
    },
  },
  '/openenv/{token}/health': {
    get: {
      summary:
        'OpenEnv health check; the OpenEnv WebSocket protocol itself is GET /openenv/{token}/ws with an upgrade (contract section 15)',
      tokenInPath: true,
      answers: { '200': healthSchema },
    },
  },
  '/v1/episodes/{id}': {
    delete: {
      summary: 'Cancel the episode and tear it down',
      episodeId: true,
      answers: { '204': null, '404': errorBodySchema },
    },
  },
};

function jsonSchema(schema: Schema, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, {
    io,
    target: 'draft-2020-12',
    unrepresentable: 'any',
    reused: 'inline',
  }) as Record<string, unknown>;
  delete out['$schema'];
  return out;
}

/** The protocol's OpenAPI 3.1 document. */
export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const [route, methods] of Object.entries(ROUTES)) {
    const entry: Record<string, unknown> = {};
    for (const [method, op] of Object.entries(methods)) {
      const parameters: unknown[] = [];
      if (op.episodeId === true)
        parameters.push({ name: 'id', in: 'path', required: true, schema: { type: 'string' } });
      if (op.tokenInPath === true)
        parameters.push({
          name: 'token',
          in: 'path',
          required: true,
          description: 'the server’s token (for OpenEnv clients, which take a base URL)',
          schema: { type: 'string' },
        });
      if (route.includes('{turnId}'))
        parameters.push({ name: 'turnId', in: 'path', required: true, schema: { type: 'string' } });
      for (const q of op.query ?? []) {
        parameters.push({
          name: q.name,
          in: 'query',
          required: false,
          description: q.description,
          schema: { type: 'integer', minimum: 0 },
        });
      }
      const responses: Record<string, unknown> = {
        '400': {
          description: 'the request does not match its schema',
          content: { 'application/json': { schema: jsonSchema(errorBodySchema, 'output') } },
        },
        '401': { description: op.tokenInPath === true ? 'not the server’s token' : 'no valid bearer token' },
      };
      if (op.tokenInPath === true) delete responses['400'];
      for (const [status, schema] of Object.entries(op.answers)) {
        responses[status] =
          schema === null
            ? { description: 'no content' }
            : {
                description: status === '503' ? 'at capacity: retry after the Retry-After header' : 'answer',
                content: {
                  [op.sse === true && status === '200' ? 'text/event-stream' : 'application/json']: {
                    schema: jsonSchema(schema, 'output'),
                  },
                },
              };
      }
      entry[method] = {
        summary: op.summary,
        ...(op.tokenInPath === true ? { security: [] } : {}),
        ...(parameters.length === 0 ? {} : { parameters }),
        ...(op.body === undefined
          ? {}
          : {
              requestBody: {
                required: true,
                content: { 'application/json': { schema: jsonSchema(op.body, 'input') } },
              },
            }),
        responses,
      };
    }
    paths[route] = entry;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Karotte environment server',
      version: '1.0.0',
      description: `${PROTOCOL_VERSION}: defended RL episodes over HTTP (karotte serve); OpenEnv's WebSocket protocol at /openenv/{token}/ws and each episode's MCP server at /v1/episodes/{id}/mcp.`,
    },
    security: [{ bearer: [] }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths,
  };
}
