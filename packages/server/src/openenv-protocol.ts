// OpenEnv's WebSocket protocol (contract section 15) as data: the frames a client sends, parsed
// strictly (bounded JSON, zod, the first offending field named), and the frames the server
// answers. Pure: no sockets here, so every refusal is unit-tested (openenv-protocol.test.ts).
//
// The protocol is OpenEnv's as published (meta-pytorch/OpenEnv, src/openenv/core/env_server:
// types.py WSResetMessage / WSStepMessage / WSStateMessage / WSCloseMessage, WSErrorCode;
// env_client.py sends `{"type", "data"}` and reads `data.observation`, `data.reward`,
// `data.done`). Where OpenEnv passes unknown reset arguments through a signature filter that
// drops them without a word (how a seed came to be silently ignored, OpenEnv#1102), a field
// Karotte does not know is a VALIDATION_ERROR naming it.
import { z } from 'zod';
import { parseJsonStrict } from '@karotte/base';
import { TOOL_PROFILE_NAMES } from '@karotte/core';
import { turnMessageSchema } from './schemas.js';

/** OpenEnv's error codes (`WSErrorCode`), the `code` of every error frame. */
export const OPENENV_ERROR_CODES = [
  'INVALID_JSON',
  'UNKNOWN_TYPE',
  'VALIDATION_ERROR',
  'EXECUTION_ERROR',
  'CAPACITY_REACHED',
  'FACTORY_ERROR',
  'SESSION_ERROR',
] as const;
export type OpenEnvErrorCode = (typeof OPENENV_ERROR_CODES)[number];

const JSON_LIMITS = { maxDepth: 64, maxStringLength: 16 * 1024 * 1024 };

const turnIdSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'letters, digits and . _ : - only');

/** `reset` data: a new episode (taskId, seed, …) or a live one to drive (episodeId). */
export const openEnvResetDataSchema = z
  .object({
    /** The task; may be left out when the server has one task. */
    taskId: z.string().min(1).max(256).optional(),
    /** Pins the world as in section 9: resets with one seed have equal world fingerprints. */
    seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    /** The tool profile. @default 'bash' */
    toolProfile: z.enum(TOOL_PROFILE_NAMES).optional(),
    /** Turns per step before the step ends. @default 200 */
    maxTurns: z.number().int().min(1).max(10_000).optional(),
    /**
     * Drive a live episode instead of creating one: one created over HTTP (a member of a
     * group), or this connection's own after the socket broke (a reconnect).
     */
    episodeId: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9._:-]+$/)
      .optional(),
  })
  .strict()
  .superRefine((data, ctx) => {
    if (data.episodeId === undefined) return;
    for (const key of ['taskId', 'seed', 'toolProfile', 'maxTurns'] as const) {
      if (data[key] !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `${key} cannot be given with episodeId (a live episode has its own)`,
        });
    }
  });
export type OpenEnvResetData = z.infer<typeof openEnvResetDataSchema>;

/** `step` data with the assistant message (its tool calls run in order as the student). */
const messageActionSchema = z
  .object({
    message: turnMessageSchema,
    /** The idempotency key: the same turnId again (after a reconnect) returns the first answer. */
    turnId: turnIdSchema.optional(),
  })
  .strict();

/** `step` data as OpenEnv's `CallToolAction`: one tool call. */
const callToolActionSchema = z
  .object({
    type: z.literal('call_tool'),
    tool_name: z.string().min(1).max(256),
    arguments: z.record(z.string(), z.unknown()).default({}),
    turnId: turnIdSchema.optional(),
  })
  .strict();

/** `step` data as OpenEnv's `ListToolsAction`: the tools, no turn taken. */
const listToolsActionSchema = z.object({ type: z.literal('list_tools') }).strict();

const envelopeSchema = z
  .object({
    type: z.string().max(64),
    data: z.unknown().optional(),
  })
  .strict();

/** A client frame, parsed. */
export type OpenEnvRequest =
  | { readonly type: 'reset'; readonly data: OpenEnvResetData }
  | {
      readonly type: 'step';
      readonly action:
        | {
            readonly kind: 'message';
            readonly message: z.infer<typeof turnMessageSchema>;
            readonly turnId?: string;
          }
        | {
            readonly kind: 'call_tool';
            readonly toolName: string;
            readonly arguments: Record<string, unknown>;
            readonly turnId?: string;
          }
        | { readonly kind: 'list_tools' };
    }
  | { readonly type: 'state' }
  | { readonly type: 'close' };

/** An error frame's data: OpenEnv's `{message, code}`, with Karotte's own code and the field when known. */
export interface OpenEnvErrorData {
  readonly message: string;
  readonly code: OpenEnvErrorCode;
  /** Karotte's precise code (`TASK_NOT_FOUND`, `EPISODE_DONE`, `AT_CAPACITY`, …). */
  readonly reason?: string;
  /** The offending field, as a dotted path (`data.seed`, `data.message.role`). */
  readonly field?: string;
}

export type ParsedFrame =
  | { readonly ok: true; readonly request: OpenEnvRequest }
  | { readonly ok: false; readonly error: OpenEnvErrorData };

function issueOf(error: z.ZodError, prefix: string): { field: string | undefined; message: string } {
  const issue = error.issues[0]!;
  let field = [prefix, ...issue.path.map(String)].filter((p) => p !== '').join('.');
  let message = issue.message;
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    field = field === '' ? key : `${field}.${key}`;
    message = `unknown field ${field}`;
  } else if (issue.code === 'invalid_union') {
    message = 'not an action: send {"message": <assistant message>}, a call_tool or a list_tools action';
  }
  return {
    field: field === '' ? undefined : field,
    message: `${field === '' ? '(frame)' : field}: ${message}`,
  };
}

function invalid(error: z.ZodError, prefix: string): ParsedFrame {
  const { field, message } = issueOf(error, prefix);
  return {
    ok: false,
    error: { code: 'VALIDATION_ERROR', message, ...(field === undefined ? {} : { field }) },
  };
}

/** Parse one text frame a client sent. Never throws: a bad frame is an error frame's data. */
export function parseOpenEnvFrame(text: string): ParsedFrame {
  const parsed = parseJsonStrict(text, JSON_LIMITS);
  if (!parsed.ok)
    return { ok: false, error: { code: 'INVALID_JSON', message: `Invalid JSON: ${parsed.reason}` } };
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return {
      ok: false,
      error: { code: 'VALIDATION_ERROR', message: 'a frame is a JSON object {"type", "data"}' },
    };
  const envelope = envelopeSchema.safeParse(value);
  if (!envelope.success) return invalid(envelope.error, '');
  const { type, data } = envelope.data;
  switch (type) {
    case 'reset': {
      const reset = openEnvResetDataSchema.safeParse(data ?? {});
      if (!reset.success) return invalid(reset.error, 'data');
      return { ok: true, request: { type: 'reset', data: reset.data } };
    }
    case 'step': {
      if (data === undefined)
        return {
          ok: false,
          error: { code: 'VALIDATION_ERROR', message: 'data: a step needs its action', field: 'data' },
        };
      const kind =
        typeof data === 'object' && data !== null && !Array.isArray(data) && 'type' in data
          ? data.type
          : undefined;
      if (kind === 'call_tool') {
        const call = callToolActionSchema.safeParse(data);
        if (!call.success) return invalid(call.error, 'data');
        return {
          ok: true,
          request: {
            type: 'step',
            action: {
              kind: 'call_tool',
              toolName: call.data.tool_name,
              arguments: call.data.arguments,
              ...(call.data.turnId === undefined ? {} : { turnId: call.data.turnId }),
            },
          },
        };
      }
      if (kind === 'list_tools') {
        const list = listToolsActionSchema.safeParse(data);
        if (!list.success) return invalid(list.error, 'data');
        return { ok: true, request: { type: 'step', action: { kind: 'list_tools' } } };
      }
      if (kind !== undefined)
        return {
          ok: false,
          error: {
            code: 'VALIDATION_ERROR',
            message: `data.type: unknown action ${JSON.stringify(kind)} (call_tool or list_tools; or send {"message": …})`,
            field: 'data.type',
          },
        };
      const step = messageActionSchema.safeParse(data);
      if (!step.success) return invalid(step.error, 'data');
      return {
        ok: true,
        request: {
          type: 'step',
          action: {
            kind: 'message',
            message: step.data.message,
            ...(step.data.turnId === undefined ? {} : { turnId: step.data.turnId }),
          },
        },
      };
    }
    case 'state':
    case 'close':
      if (
        data !== undefined &&
        !(typeof data === 'object' && data !== null && Object.keys(data).length === 0)
      )
        return {
          ok: false,
          error: {
            code: 'VALIDATION_ERROR',
            message: `data: a ${type} frame carries no data`,
            field: 'data',
          },
        };
      return { ok: true, request: { type } };
    default:
      return {
        ok: false,
        error: { code: 'UNKNOWN_TYPE', message: `Unknown message type: ${type.slice(0, 64)}` },
      };
  }
}

/** OpenEnv's code for one of Karotte's HTTP answers (status and code). */
export function openEnvCodeOf(status: number, code: string): OpenEnvErrorCode {
  if (status === 503) return 'CAPACITY_REACHED';
  if (status === 400 || code === 'TASK_NOT_FOUND') return 'VALIDATION_ERROR';
  if (status === 404) return 'SESSION_ERROR';
  if (status === 409) return 'EXECUTION_ERROR';
  return 'FACTORY_ERROR';
}

/** An error frame. */
export function errorFrame(error: OpenEnvErrorData): string {
  return JSON.stringify({ type: 'error', data: error });
}
