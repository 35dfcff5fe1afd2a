import { parseOptions } from '@karotte/base';
import { Queue, QueueEvents, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { DispatchError } from './errors.js';
import { clientConnection, redisTargetSchema } from './redis.js';
import {
  PAYLOAD_SCHEMA_VERSION,
  jobAgentSchema,
  parseJobResult,
  parsePayload,
  runIdSchema,
  taskDigestSchema,
  type EpisodeResultJson,
  type JobPayload,
  type JobResult,
} from './schema.js';
import { prefixSchema, queueNameSchema } from './worker.js';

/** Options of {@link createDispatchClient}. */
export const clientOptionsSchema = z
  .object({
    redis: redisTargetSchema,
    /** @default 'episodes' */
    queue: queueNameSchema.default('episodes'),
    /** @default '{karotte}' */
    prefix: prefixSchema.default('{karotte}'),
  })
  .strict();

export type ClientOptions = z.input<typeof clientOptionsSchema>;

/** What {@link DispatchClient.submit} enqueues. */
export const submitOptionsSchema = z
  .object({
    runId: runIdSchema,
    task: z.object({ id: z.string(), digest: taskDigestSchema.optional() }).strict(),
    /** The agent: `{kind: 'replay', messages}` or `{kind: 'openai', endpoint, model, sampling?, policyVersion?}`. */
    agent: jobAgentSchema,
    /** Episodes to add. @default 1 */
    n: z.number().int().min(1).max(100_000).default(1),
    /** Index of the first episode (ids are `<run>-<task>-<index>`). @default 0 */
    first: z.number().int().min(0).max(1e9).default(0),
    maxTurns: z.number().int().min(1).optional(),
    /** Tries of a host fault (`error`); verdicts are never retried. @default 3 */
    attempts: z.number().int().min(1).max(20).default(3),
    /** First wait before retrying a host fault, ms (doubling, with jitter). @default 10000 */
    retryDelayMs: z.number().int().min(0).max(3_600_000).default(10_000),
    /** How long finished jobs (and the run's episode list) are kept, s. @default 604800 */
    keepSeconds: z.number().int().min(60).max(31_536_000).default(604_800),
  })
  .strict();

export type SubmitOptions = z.input<typeof submitOptionsSchema>;

/** One episode of a run as `karotte results` reports it. */
export interface EpisodeReport {
  readonly episodeId: string;
  /** BullMQ's state: `waiting`, `active`, `delayed`, `completed`, `failed`, or `missing` (removed). */
  readonly state: string;
  /** result.json (contract section 6) once the episode has one; null before. */
  readonly result: EpisodeResultJson | null;
  /** The stored return value (which attempt produced it), for a completed episode. */
  readonly accepted: JobResult | null;
}

/** Progress of {@link DispatchClient.waitForResults}. */
export interface RunProgress {
  readonly total: number;
  readonly done: number;
  readonly active: number;
  readonly waiting: number;
  readonly passed: number;
  readonly failed: number;
  readonly error: number;
}

/** A producer and reader of episodes: see {@link createDispatchClient}. */
export interface DispatchClient {
  /**
   * Enqueue `n` episodes of one task. Each job id is its episode id, `<run>-<task>-<index>`,
   * so submitting the same episodes again adds nothing (BullMQ keeps the first). The payload is
   * checked here and again by the worker. Returns the episode ids in order.
   */
  submit(options: SubmitOptions): Promise<string[]>;
  /** The episodes of a run and their results, in id order. */
  results(runId: string): Promise<EpisodeReport[]>;
  /** Wait until every episode of the run has a result; reports progress on each change. */
  waitForResults(
    runId: string,
    options?: { onProgress?: (p: RunProgress) => void; abortSignal?: AbortSignal; pollMs?: number },
  ): Promise<EpisodeReport[]>;
  /** The BullMQ queue (counts, metrics). */
  readonly queue: Queue;
  close(): Promise<void>;
}

const FINAL = new Set(['completed', 'failed', 'missing']);

/** The key of a run's episode list (a Redis set), beside the queue's keys. */
function runKey(prefix: string, queue: string, runId: string): string {
  return `${prefix}:${queue}:karotte-run:${runId}`;
}

/** The result of a job that failed for good (a refused payload, stalls past the limit). */
function failedResult(job: Job, payload: JobPayload | null): EpisodeResultJson {
  const reason = job.failedReason ?? 'failed';
  // BullMQ's own reasons: "job stalled more than allowable limit" (workers died while running
  // it) and "job started more than allowable limit" (maxStartedAttempts); ours start with a code.
  const code =
    /^([A-Z][A-Z_]+):/.exec(reason)?.[1] ??
    (/(stalled|started) more than allowable limit/.test(reason) ? 'WORKER_LOST' : 'HOST_FAULT');
  return {
    taskId: payload?.task.id ?? 'unknown',
    status: 'error',
    score: 0,
    misbehavior: [],
    sandbox: { uid: null },
    durationMs:
      job.finishedOn !== undefined && job.processedOn !== undefined ? job.finishedOn - job.processedOn : 0,
    error: { code, message: reason },
  };
}

/**
 * A client of the episode queue for trainers and `karotte submit` / `karotte results`. Results
 * are read from each job's state (reconciled, never from events alone, so a reconnect or a
 * replayed event cannot lose or double one): a completed job's return value is its result; a
 * job that failed for good gets an `error` result saying why.
 */
export function createDispatchClient(options: ClientOptions): DispatchClient {
  const o = parseOptions(clientOptionsSchema, options, 'client options');
  const connection = clientConnection(o.redis);
  const queue = new Queue(o.queue, { connection, prefix: o.prefix });
  const redis = new Redis(connection);
  queue.on('error', () => undefined);
  redis.on('error', () => undefined);
  let closed = false;
  const live = (): void => {
    if (closed) throw new DispatchError('DISPATCH_STATE', 'the client was closed');
  };
  const wrap = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      if (DispatchError.isInstance(error)) throw error;
      throw new DispatchError(
        'REDIS_UNAVAILABLE',
        `${what}: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
  };

  const submit = async (input: SubmitOptions): Promise<string[]> => {
    live();
    const s = parseOptions(submitOptionsSchema, input, 'submit options');
    const payloads: JobPayload[] = [];
    for (let i = s.first; i < s.first + s.n; i += 1) {
      payloads.push(
        parsePayload({
          schema: PAYLOAD_SCHEMA_VERSION,
          runId: s.runId,
          episodeId: `${s.runId}-${s.task.id}-${i}`,
          task: s.task,
          agent: s.agent,
          ...(s.maxTurns === undefined ? {} : { maxTurns: s.maxTurns }),
          submittedAt: Date.now(),
        }),
      );
    }
    return wrap('submit', async () => {
      // The run's list first: an episode a worker finishes is always findable by its run.
      const key = runKey(o.prefix, o.queue, s.runId);
      await redis.sadd(key, ...payloads.map((p) => p.episodeId));
      await redis.expire(key, s.keepSeconds);
      await queue.addBulk(
        payloads.map((data) => ({
          name: 'episode',
          data,
          opts: {
            jobId: data.episodeId,
            attempts: s.attempts,
            backoff: { type: 'exponential', delay: s.retryDelayMs, jitter: 0.5 },
            removeOnComplete: { age: s.keepSeconds },
            removeOnFail: { age: s.keepSeconds },
          },
        })),
      );
      return payloads.map((p) => p.episodeId);
    });
  };

  const results = async (runIdInput: string): Promise<EpisodeReport[]> => {
    live();
    const runId = parseOptions(runIdSchema, runIdInput, 'run id');
    return wrap('results', async () => {
      const ids = (await redis.smembers(runKey(o.prefix, o.queue, runId))).sort(compareEpisodeIds);
      const reports: EpisodeReport[] = [];
      for (const episodeId of ids) {
        // The state first, then the job: a job moves to completed or failed in one Redis script
        // with its return value or failed reason, so a job read after its state was final holds
        // them (read before, it could be the hash of a moment earlier, without its reason).
        const state = await queue.getJobState(episodeId);
        const job = state === 'unknown' ? undefined : await queue.getJob(episodeId);
        if (job === undefined) {
          reports.push({ episodeId, state: 'missing', result: null, accepted: null });
          continue;
        }
        let payload: JobPayload | null;
        try {
          payload = parsePayload(job.data);
        } catch {
          payload = null;
        }
        if (state === 'completed') {
          const accepted = parseJobResult(job.returnvalue);
          reports.push({
            episodeId,
            state,
            result: accepted?.result ?? failedResult(job, payload),
            accepted,
          });
        } else if (state === 'failed') {
          reports.push({ episodeId, state, result: failedResult(job, payload), accepted: null });
        } else reports.push({ episodeId, state, result: null, accepted: null });
      }
      return reports;
    });
  };

  const waitForResults: DispatchClient['waitForResults'] = async (runId, opts = {}) => {
    live();
    const events = new QueueEvents(o.queue, {
      connection: { ...connection, maxRetriesPerRequest: null },
      prefix: o.prefix,
    });
    events.on('error', () => undefined);
    let wake: (() => void) | undefined;
    const poke = (): void => wake?.();
    events.on('completed', poke);
    events.on('failed', poke);
    events.on('active', poke);
    let last = '';
    try {
      for (;;) {
        if (opts.abortSignal?.aborted === true)
          throw new DispatchError('ABORTED', 'stopped waiting for results', {
            cause: opts.abortSignal.reason,
          });
        let reports: EpisodeReport[] | null = null;
        try {
          reports = await results(runId);
        } catch (error) {
          // Redis away (a restart): keep waiting, read again once it is back.
          if (!(DispatchError.isInstance(error) && error.code === 'REDIS_UNAVAILABLE')) throw error;
        }
        if (reports !== null) {
          const progress: RunProgress = {
            total: reports.length,
            done: reports.filter((r) => FINAL.has(r.state)).length,
            active: reports.filter((r) => r.state === 'active').length,
            waiting: reports.filter((r) => !FINAL.has(r.state) && r.state !== 'active').length,
            passed: reports.filter((r) => r.result?.status === 'passed').length,
            failed: reports.filter((r) => r.result?.status === 'failed').length,
            error: reports.filter((r) => r.result?.status === 'error').length,
          };
          const text = JSON.stringify(progress);
          if (text !== last) {
            last = text;
            opts.onProgress?.(progress);
          }
          if (progress.done === progress.total) return reports;
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, opts.pollMs ?? 1_000);
          const done = (): void => {
            clearTimeout(timer);
            opts.abortSignal?.removeEventListener('abort', done);
            resolve();
          };
          wake = done;
          opts.abortSignal?.addEventListener('abort', done, { once: true });
        });
      }
    } finally {
      wake = undefined;
      await events.close().catch(() => undefined);
    }
  };

  return {
    submit,
    results,
    waitForResults,
    queue,
    close: async () => {
      if (closed) return;
      closed = true;
      await queue.close().catch(() => undefined);
      redis.disconnect();
    },
  };
}

/** Episode ids by run and task, then by index as a number (`-2` before `-10`). */
function compareEpisodeIds(a: string, b: string): number {
  const split = (id: string): [string, number] => {
    const at = id.lastIndexOf('-');
    return [id.slice(0, at), Number(id.slice(at + 1))];
  };
  const [pa, na] = split(a);
  const [pb, nb] = split(b);
  return pa < pb ? -1 : pa > pb ? 1 : na - nb;
}
