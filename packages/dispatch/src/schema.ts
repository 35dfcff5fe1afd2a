import { parseJsonStrict } from '@karotte/base';
import { samplingSchema } from '@karotte/agents';
import { replaySchema, taskIdSchema } from '@karotte/core';
import { z } from 'zod';
import { DispatchError } from './errors.js';

/** The largest job payload accepted on either side, in bytes of its JSON: 16 KiB. */
export const MAX_PAYLOAD_BYTES = 16 * 1024;

/** The largest result (a job's return value) a worker stores, in bytes of its JSON: 64 KiB. */
export const MAX_RESULT_BYTES = 64 * 1024;

/** The payload schema version this package writes and reads. */
export const PAYLOAD_SCHEMA_VERSION = 1;

/**
 * A run id: what ties a trainer's episodes together. Lowercase letters, digits and dashes, at
 * most 64 characters; never a `:` (a BullMQ job id is `<runId>-<taskId>-<index>`).
 */
export const runIdSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'a run id is [a-z0-9][a-z0-9-]*, at most 64 characters');

/** An episode id, also the BullMQ job id: `<runId>-<taskId>-<index>`. */
export const episodeIdSchema = z
  .string()
  .max(200)
  .regex(/^[a-z0-9][a-z0-9-]*-[0-9]+$/, 'an episode id is <run>-<task>-<index>');

/** A task digest: `sha256:` and 64 lowercase hex digits (see {@link taskDigest}). */
export const taskDigestSchema = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'sha256:<64 hex digits>');

/** The name of a model endpoint a worker knows (its URL and key stay on the worker). */
export const endpointNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'an endpoint name is [a-z0-9][a-z0-9-]*');

/**
 * The agent a job names: the replay agent, whose assistant messages travel in the payload (the
 * operator's script of the student, never task data), or a model behind an OpenAI-compatible
 * endpoint that the payload names only: its URL and API key are the worker's own
 * (`WorkerOptions.endpoints`), never in Redis.
 */
export const jobAgentSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('replay'), messages: replaySchema }).strict(),
  z
    .object({
      kind: z.literal('openai'),
      endpoint: endpointNameSchema,
      model: z.string().min(1).max(1024),
      sampling: samplingSchema.optional(),
      /** The trainer's policy version, kept with the result so stale episodes can be dropped. */
      policyVersion: z.string().min(1).max(200).optional(),
    })
    .strict(),
]);

/**
 * A job's payload, version 1: what a worker needs to run one episode and nothing more. The task
 * is named by id (resolved in the worker's own task directory) and, when given, checked
 * against its digest; no answer key, grader, hidden file or API key has a field here, and
 * unknown fields are refused.
 */
export const jobPayloadSchema = z
  .object({
    schema: z.literal(PAYLOAD_SCHEMA_VERSION),
    runId: runIdSchema,
    episodeId: episodeIdSchema,
    task: z.object({ id: taskIdSchema, digest: taskDigestSchema.optional() }).strict(),
    agent: jobAgentSchema,
    /** Turns per step; default: the replay's length. */
    maxTurns: z.number().int().min(1).max(100_000).optional(),
    /** When the producer added it (ms since the epoch). */
    submittedAt: z.number().int().nonnegative(),
  })
  .strict();

export type JobPayload = z.output<typeof jobPayloadSchema>;

/** The contract's result.json fields (section 6), with whatever else the episode recorded. */
export const episodeResultSchema = z
  .object({
    taskId: z.string(),
    status: z.enum(['passed', 'failed', 'error']),
    score: z.number(),
    misbehavior: z.array(z.object({ code: z.string(), message: z.string() }).loose()),
    sandbox: z.object({ uid: z.number().int().nullable() }).loose(),
    durationMs: z.number(),
  })
  .loose();

export type EpisodeResultJson = z.output<typeof episodeResultSchema>;

/**
 * A job's return value, version 1: stored by BullMQ's `moveToFinished` under the job's lock,
 * so only the attempt that holds the lock can store it. `attemptToken` is that attempt's lock
 * token and `attemptsStarted` the job's start count when it began (together they name the
 * attempt); `transcript` is in the attempt's own output directory.
 */
export const jobResultSchema = z
  .object({
    schema: z.literal(PAYLOAD_SCHEMA_VERSION),
    runId: runIdSchema,
    episodeId: episodeIdSchema,
    attemptToken: z.string().min(1).max(200),
    worker: z.string().max(200),
    attemptsStarted: z.number().int().nonnegative(),
    outDir: z.string().max(4096),
    /** The payload's `agent.policyVersion`, when it had one. */
    policyVersion: z.string().max(200).optional(),
    transcript: z
      .object({ path: z.string().max(4096), sha256: z.string(), bytes: z.number().int().nonnegative() })
      .strict()
      .nullable(),
    result: episodeResultSchema,
  })
  .strict();

export type JobResult = z.output<typeof jobResultSchema>;

/**
 * Check a payload on the producer's side or the worker's: the schema, then the size. Throws
 * {@link DispatchError} `INVALID_PAYLOAD` naming the field.
 */
export function parsePayload(value: unknown): JobPayload {
  const parsed = jobPayloadSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue === undefined ? 'payload' : issue.path.map(String).join('.') || 'payload';
    throw new DispatchError('INVALID_PAYLOAD', `job payload: ${field}: ${issue?.message ?? 'invalid'}`, {
      field,
      cause: parsed.error,
    });
  }
  const bytes = Buffer.byteLength(JSON.stringify(parsed.data));
  if (bytes > MAX_PAYLOAD_BYTES)
    throw new DispatchError(
      'INVALID_PAYLOAD',
      `job payload is ${bytes} bytes, more than the ${MAX_PAYLOAD_BYTES} allowed (a replay that long belongs in a file on the workers)`,
      { field: 'payload' },
    );
  if (!parsed.data.episodeId.startsWith(`${parsed.data.runId}-`))
    throw new DispatchError('INVALID_PAYLOAD', 'job payload: episodeId does not start with its runId', {
      field: 'episodeId',
    });
  return parsed.data;
}

/** Parse a stored return value (BullMQ keeps it as JSON text); null when it is not one of ours. */
export function parseJobResult(value: unknown): JobResult | null {
  let candidate = value;
  if (typeof value === 'string') {
    const parsed = parseJsonStrict(value, { maxDepth: 64, maxStringLength: 4 * MAX_RESULT_BYTES });
    if (!parsed.ok) return null;
    candidate = parsed.value;
  }
  const result = jobResultSchema.safeParse(candidate);
  return result.success ? result.data : null;
}
