// The protocol's schemas: one zod schema per request body (strict: an unknown field is a 400
// naming it) and per answer. The OpenAPI document (openapi.ts) is generated from these same
// schemas, so what is validated and what is published cannot drift apart.
import { z } from 'zod';
import { assistantMessageSchema, TOOL_PROFILE_NAMES } from '@karotte/core';

/** The protocol's name and version, in `GET /v1/capabilities`. */
export const PROTOCOL_VERSION = 'karotte-env/1';

/** Largest request body, in bytes. @default 4 MiB */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Largest group (`POST /v1/groups` `size`). */
export const MAX_GROUP_SIZE = 64;

const idSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'letters, digits and . _ : - only');

export const errorBodySchema = z
  .object({
    error: z
      .object({
        code: z.string(),
        message: z.string(),
        field: z.string().optional(),
      })
      .strict(),
  })
  .strict()
  .meta({ title: 'Error' });

const seedSchema = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** `POST /v1/episodes`. */
export const createEpisodeRequestSchema = z
  .object({
    taskId: z.string().min(1).max(256),
    /** Pins the episode's world: episodes of one task and seed have equal world fingerprints. */
    seed: seedSchema.optional(),
    /** The tool profile. @default 'bash' */
    toolProfile: z.enum(TOOL_PROFILE_NAMES).optional(),
    /** Turns per step before the step ends. @default 200 */
    maxTurns: z.number().int().min(1).max(10_000).optional(),
  })
  .strict()
  .meta({ title: 'CreateEpisodeRequest' });
export type CreateEpisodeRequest = z.infer<typeof createEpisodeRequestSchema>;

/** `POST /v1/groups`: `size` episodes of one task built from one seed (GRPO). */
export const createGroupRequestSchema = createEpisodeRequestSchema
  .extend({ size: z.number().int().min(1).max(MAX_GROUP_SIZE) })
  .strict()
  .meta({ title: 'CreateGroupRequest' });
export type CreateGroupRequest = z.infer<typeof createGroupRequestSchema>;

/** An assistant message as the contract's section 5 has it, with the model's reasoning allowed. */
export const turnMessageSchema = assistantMessageSchema
  .extend({
    reasoning_content: z
      .string()
      .max(1024 * 1024)
      .nullable()
      .optional(),
  })
  .strict()
  .meta({ title: 'AssistantMessage' });

const tokenIdsSchema = z.array(z.number().int().min(0)).max(1_000_000);

/** `POST /v1/episodes/{id}/turns`. */
export const turnRequestSchema = z
  .object({
    /** The idempotency key: the same `turnId` again returns the first answer and runs nothing. */
    turnId: idSchema,
    message: turnMessageSchema,
    /** The turn's token data, recorded in the transcript and the result's turns. */
    tokens: z
      .object({
        promptIds: tokenIdsSchema.optional(),
        completionIds: tokenIdsSchema,
        logprobs: z.array(z.number()).max(1_000_000).optional(),
      })
      .strict()
      .optional(),
    /** The policy that produced the message, recorded with the turn. */
    policyVersion: z.string().min(1).max(256).optional(),
  })
  .strict()
  .meta({ title: 'TurnRequest' });
export type TurnRequestBody = z.infer<typeof turnRequestSchema>;

/** `POST /v1/episodes/{id}/finish`. */
export const finishRequestSchema = z.object({}).strict().meta({ title: 'FinishRequest' });

/** `POST /v1/episodes/{id}/run`: Karotte drives the model itself. */
export const runRequestSchema = z
  .object({
    agent: z
      .object({
        kind: z.literal('openai-compatible'),
        /** The model endpoint's base URL, up to `/v1`. */
        baseUrl: z.url({ protocol: /^https?$/ }).max(4096),
        model: z.string().min(1).max(1024),
        /** The server's environment variable holding the API key. @default 'OPENAI_API_KEY' */
        apiKeyEnv: z
          .string()
          .regex(/^[A-Z_][A-Z0-9_]*$/)
          .max(128)
          .optional(),
        sampling: z
          .object({
            temperature: z.number().min(0).max(2).optional(),
            topP: z.number().gt(0).max(1).optional(),
            maxTokens: z.number().int().min(1).max(10_000_000).optional(),
            seed: z.number().int().optional(),
          })
          .strict()
          .optional(),
        /** More body fields for the endpoint, e.g. vLLM's `{"return_token_ids": true, "logprobs": true}`. */
        extraBody: z.record(z.string().min(1).max(256), z.unknown()).optional(),
      })
      .strict(),
  })
  .strict()
  .meta({ title: 'RunRequest' });
export type RunRequestBody = z.infer<typeof runRequestSchema>;

const chatToolSchema = z
  .object({
    type: z.literal('function'),
    function: z
      .object({ name: z.string(), description: z.string(), parameters: z.record(z.string(), z.unknown()) })
      .strict(),
  })
  .strict();

const chatMessageSchema = z
  .object({ role: z.enum(['system', 'user', 'assistant', 'tool']) })
  .catchall(z.unknown())
  .meta({ title: 'ChatMessage' });

const toolMessageSchema = z
  .object({
    role: z.literal('tool'),
    tool_call_id: z.string(),
    content: z.union([z.string(), z.array(z.record(z.string(), z.unknown()))]),
  })
  .strict()
  .meta({ title: 'ToolMessage' });

export const tasksResponseSchema = z
  .object({ tasks: z.array(z.object({ id: z.string(), steps: z.number().int() }).strict()) })
  .strict()
  .meta({ title: 'Tasks' });

export const episodeCreatedSchema = z
  .object({
    episodeId: z.string(),
    groupId: z.string().nullable(),
    taskId: z.string(),
    seed: z.number().int(),
    /** `sha256:<hex>` of the task's instructions, limits, tool profile, seed and every student file. */
    worldFingerprint: z.string(),
    messages: z.array(chatMessageSchema),
    tools: z.array(chatToolSchema),
  })
  .strict()
  .meta({ title: 'EpisodeCreated' });

export const groupCreatedSchema = z
  .object({ groupId: z.string(), worldFingerprint: z.string(), episodes: z.array(episodeCreatedSchema) })
  .strict()
  .meta({ title: 'GroupCreated' });

export const turnAnswerSchema = z
  .object({
    turnId: z.string(),
    /** The turn's number in the episode, from 0. */
    turnIndex: z.number().int(),
    toolMessages: z.array(toolMessageSchema),
    /** True when the current step takes no more turns. */
    stepEnded: z.boolean(),
    /** True when the episode needs no more turns: call finish. */
    done: z.boolean(),
    /** The next step's instructions, when a step ended and another begins. */
    nextMessages: z.array(chatMessageSchema),
    stopReason: z.string().nullable(),
  })
  .strict()
  .meta({ title: 'TurnAnswer' });
export type TurnAnswer = z.infer<typeof turnAnswerSchema>;

const attestationStepSchema = z
  .object({
    step: z.number().int(),
    /** `sha256:<hex>` over the custody copy's entries (path, type, bytes, sha256), or null when custody was refused. */
    submissionSha256: z.string().nullable(),
    reaper: z
      .object({
        confirmed: z.boolean(),
        mechanism: z.string().nullable(),
        survivors: z.array(z.number().int()),
      })
      .strict()
      .nullable(),
    reclaimed: z.boolean().nullable(),
    grader: z
      .object({
        exitCode: z.number().int().nullable(),
        status: z.string(),
        confinement: z.string().nullable(),
        durationMs: z.number(),
      })
      .strict()
      .nullable(),
  })
  .strict();

export const episodeResultSchema = z
  .object({
    taskId: z.string(),
    status: z.enum(['passed', 'failed', 'error']),
    score: z.number(),
    /** The score for training (0 when the episode ended in `error`: `trainable` is false then, mask it). */
    reward: z.number(),
    misbehavior: z.array(z.object({ code: z.string(), message: z.string() }).catchall(z.unknown())),
    sandbox: z.object({ uid: z.number().int().nullable() }).strict(),
    durationMs: z.number(),
    episodeId: z.string(),
    groupId: z.string().nullable(),
    seed: z.number().int(),
    worldFingerprint: z.string(),
    /** `infra`: the host or environment failed (mask it); `student`: misbehavior; `none`: a plain verdict. */
    blame: z.enum(['none', 'student', 'infra']),
    /** False exactly when `blame` is `infra`. */
    trainable: z.boolean(),
    attestation: z
      .object({
        steps: z.array(attestationStepSchema),
        network: z.object({ checked: z.boolean(), isolated: z.boolean().nullable() }).strict().nullable(),
        karotteServer: z.string(),
      })
      .strict(),
    turnLog: z.array(z.record(z.string(), z.unknown())),
  })
  .catchall(z.unknown())
  .meta({ title: 'EpisodeResult' });
export type ServedResult = z.infer<typeof episodeResultSchema>;

export const rolloutSchema = z
  .object({
    result: episodeResultSchema,
    /** The whole conversation: system, user, assistant and tool messages. */
    messages: z.array(chatMessageSchema),
    turns: z.array(
      z
        .object({
          index: z.number().int(),
          finishReason: z.string(),
          usage: z.record(z.string(), z.unknown()).nullable(),
          tokens: z.record(z.string(), z.unknown()).nullable(),
          modelMs: z.number(),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ title: 'Rollout' });

export const eventSchema = z
  .object({
    seq: z.number().int(),
    time: z.string(),
    type: z.string(),
    data: z.record(z.string(), z.unknown()),
  })
  .strict()
  .meta({ title: 'Event' });

export const capabilitiesSchema = z
  .object({
    protocol: z.literal(PROTOCOL_VERSION),
    toolProfiles: z.array(z.string()),
    agents: z.array(z.string()),
    maxEpisodes: z.number().int(),
    maxGroupSize: z.number().int(),
    idleTimeoutMs: z.number().int(),
    /** Where the other protocols are: OpenEnv's WebSocket and each episode's MCP server (contract section 15). */
    endpoints: z.object({ openenv: z.string(), mcp: z.string() }).strict(),
  })
  .strict()
  .meta({ title: 'Capabilities' });
