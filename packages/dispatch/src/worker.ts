import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import process from 'node:process';
import { createOpenAIAgent } from '@karotte/agents';
import { parseOptions } from '@karotte/base';
import {
  checkHost,
  createReplayAgent,
  createSandboxWorld,
  recoverLeftovers,
  runEpisode,
  type Agent,
  type EpisodeResult,
  type WorldFactory,
} from '@karotte/core';
import { Queue, UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import { z } from 'zod';
import { DispatchError } from './errors.js';
import { Metrics, serveHealth, type HealthServer } from './metrics.js';
import { redisTargetSchema, workerConnection } from './redis.js';
import {
  MAX_RESULT_BYTES,
  PAYLOAD_SCHEMA_VERSION,
  endpointNameSchema,
  parsePayload,
  type JobPayload,
  type JobResult,
} from './schema.js';
import { TaskStore } from './tasks.js';

/** What a worker tells its log: one object per event, in the order they happen. */
export interface WorkerEvent {
  readonly event:
    | 'reclaimed'
    | 'ready'
    | 'started'
    | 'completed'
    | 'refused'
    | 'host_fault'
    | 'fenced'
    | 'handed_back'
    | 'write_rejected'
    | 'stalled_seen'
    | 'redis_error'
    | 'draining'
    | 'closed';
  readonly at: number;
  readonly jobId?: string;
  readonly token?: string;
  readonly [field: string]: unknown;
}

/** The queue name a worker serves and a producer fills. */
export const queueNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'a queue name is [a-z0-9][a-z0-9-]*');

/** The key prefix of every BullMQ key; braces make one Redis Cluster hash slot. */
export const prefixSchema = z.string().regex(/^[A-Za-z0-9{}_-]{1,64}$/, 'a prefix is letters, digits, {}_-');

/**
 * A model endpoint a worker knows by name: where it is and where its API key is (an environment
 * variable or a file of the worker's), so a job names the endpoint and never carries either.
 */
export const endpointSchema = z
  .object({
    /** The API's base URL, up to `/v1`. */
    baseURL: z.url({ protocol: /^https?$/ }).max(4096),
    /** The environment variable holding the key. */
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .max(256)
      .optional(),
    /** A file holding the key, private to the worker's user. */
    apiKeyFile: z.string().min(1).max(4096).optional(),
  })
  .strict()
  .refine((e) => e.apiKeyEnv === undefined || e.apiKeyFile === undefined, {
    error: 'give apiKeyEnv or apiKeyFile, not both',
  });

export type Endpoint = z.output<typeof endpointSchema>;

/** Options of {@link createWorker}: strict, so a misspelled key fails instead of vanishing. */
export const workerOptionsSchema = z
  .object({
    /** Where Redis is (see `parseRedisUrl`). */
    redis: redisTargetSchema,
    /** @default 'episodes' */
    queue: queueNameSchema.default('episodes'),
    /** @default '{karotte}' */
    prefix: prefixSchema.default('{karotte}'),
    /** The worker's own task directory: tasks are resolved here by id, never sent through Redis. */
    tasksDir: z.string().min(1),
    /** Where each attempt writes result.json and transcript.jsonl: `<dir>/<episodeId>/<attempt>/`. */
    artifactsDir: z.string().min(1),
    /** Episodes run at once. @default 1 */
    concurrency: z.number().int().min(1).max(1024).default(1),
    /** The worker's name, stored as each job's `processedBy`. @default the host name */
    name: z.string().min(1).max(200).optional(),
    /** BullMQ lock duration, ms. @default 30000 */
    lockMs: z.number().int().min(1_000).max(600_000).default(30_000),
    /** BullMQ stalled-check interval, ms. @default 30000 */
    stalledMs: z.number().int().min(500).max(600_000).default(30_000),
    /** Stalls (worker deaths) a job survives before it fails. @default 2 */
    maxStalled: z.number().int().min(0).max(100).default(2),
    /** Starts of a job (crashes, hand-backs and retries included) before it fails. @default 8 */
    maxStartedAttempts: z.number().int().min(1).max(1000).default(8),
    /**
     * The lease watchdog: an episode whose lock has gone this fraction of `lockMs` without a
     * confirmed renewal is aborted and torn down. @default 0.7
     */
    fenceFraction: z.number().min(0.2).max(0.95).default(0.7),
    /** How long a drain lets running episodes finish before it hands them back, ms. @default 600000 */
    drainTimeoutMs: z.number().int().min(0).max(86_400_000).default(600_000),
    /** How long `start()` waits for Redis before it gives up (`REDIS_UNAVAILABLE`), ms. @default 30000 */
    connectTimeoutMs: z.number().int().min(100).max(3_600_000).default(30_000),
    /** Stop (drain) after this many episodes were taken. */
    maxEpisodes: z.number().int().min(1).optional(),
    /** Stop (drain) once the queue has been empty this long, ms (a Kubernetes Job's worker). */
    idleMs: z.number().int().min(100).optional(),
    /** `/healthz`, `/readyz` and `/metrics` on this port (0: any free one); none when absent. */
    metricsPort: z.number().int().min(0).max(65_535).optional(),
    /** @default '127.0.0.1' */
    metricsHost: z.string().min(1).default('127.0.0.1'),
    /** The model endpoints jobs may name (`agent.kind: 'openai'`), by name. @default {} */
    endpoints: z.record(endpointNameSchema, endpointSchema).default({}),
    /** The world each episode runs in. @default createSandboxWorld */
    createWorld: z.custom<WorldFactory>((v) => typeof v === 'function').optional(),
    /**
     * Reclaim what an earlier worker killed on this host left behind; runs before any job is
     * taken. @default core's `recoverLeftovers()` as root, nothing otherwise
     */
    recover: z.custom<() => Promise<unknown>>((v) => typeof v === 'function').optional(),
    /** Refuse a host that cannot confine every defense (`checkHost()`). @default true */
    startupCheck: z.boolean().default(true),
    /** Called for every {@link WorkerEvent}. */
    onEvent: z.custom<(event: WorkerEvent) => void>((v) => typeof v === 'function').optional(),
  })
  .strict();

export type WorkerOptions = z.input<typeof workerOptionsSchema>;

/** Per-episode memory {@link autoConcurrency} plans with when the caller names none: 512 MiB. */
const AUTO_EPISODE_MEMORY_BYTES = 512 * 1024 * 1024;

/**
 * `--concurrency auto`: as many episodes as 80% of the host's memory holds at
 * `memoryBytesPerEpisode` each, and at most four per CPU (an episode waits on its commands
 * and grader most of the time); at least 1. Core's admission still bounds what runs at once.
 */
export function autoConcurrency(memoryBytesPerEpisode: number = AUTO_EPISODE_MEMORY_BYTES): number {
  const byMemory = Math.floor((os.totalmem() * 0.8) / Math.max(memoryBytesPerEpisode, 16 * 1024 * 1024));
  return Math.max(1, Math.min(byMemory, os.availableParallelism() * 4, 1024));
}

type FenceReason = 'watchdog' | 'renewal' | 'cancel' | 'drain' | 'close';

interface Lease {
  readonly jobId: string;
  readonly token: string;
  readonly controller: AbortController;
  lastRenewedAt: number;
  reason: FenceReason | null;
}

/** A running worker: see {@link createWorker}. */
export interface DispatchWorker {
  /** Reclaim leftovers, check the host, connect, then take jobs. @throws DispatchError */
  start(): Promise<void>;
  /**
   * Stop taking jobs; let running episodes finish for `drainTimeoutMs`, then hand the rest
   * back to the queue untouched (their attempts not counted); close. Resolves when closed.
   */
  drain(): Promise<void>;
  /** Hand every running episode back to the queue now (a second SIGTERM): torn down, not counted. */
  handBack(): void;
  /** Resolves once the worker has closed (after a drain, `maxEpisodes` or `idleMs`). */
  readonly closed: Promise<void>;
  /** True once started, Redis connected and not draining. */
  ready(): boolean;
  /** Episodes running now. */
  active(): number;
  /** The worker's metrics (Prometheus text through `metrics.render()`). */
  readonly metrics: Metrics;
  /** The port of `/healthz` `/readyz` `/metrics`, once started with `metricsPort`. */
  healthPort(): number | undefined;
  /** The worker's name (`processedBy`). */
  readonly name: string;
}

/**
 * The directory name of an attempt: its lock token and start count, hashed. BullMQ's token is
 * per worker slot, reused by the slot's next job; with the job's start count (`ats`, raised by
 * every move to active) it names one attempt.
 */
function attemptDirName(token: string, attemptsStarted: number): string {
  return createHash('sha256').update(`${token}#${attemptsStarted}`).digest('hex').slice(0, 16);
}

async function fileDigest(file: string): Promise<JobResult['transcript']> {
  try {
    const bytes = await fs.readFile(file);
    return { path: file, sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length };
  } catch {
    return null;
  }
}

/** The result as stored: whole when it fits {@link MAX_RESULT_BYTES}, else the contract's fields. */
function fitResult(result: EpisodeResult): JobResult['result'] {
  const whole = result as unknown as JobResult['result'];
  if (Buffer.byteLength(JSON.stringify(whole)) <= MAX_RESULT_BYTES) return whole;
  return {
    taskId: result.taskId,
    status: result.status,
    score: result.score,
    misbehavior: result.misbehavior
      .slice(0, 32)
      .map((m) => ({ code: m.code, message: m.message.slice(0, 512) })),
    sandbox: { uid: result.sandbox.uid },
    durationMs: result.durationMs,
    error:
      result.error === null
        ? null
        : { code: result.error.code, message: result.error.message.slice(0, 2048) },
    truncated: true,
  };
}

/** A bounded wait for a Redis command whose reply may never come (a silent partition). */
async function bounded<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => {
          resolve('timeout');
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const M = {
  episodes: ['karotte_episodes_total', 'Episodes finished by this worker, by queue and status'],
  seconds: ['karotte_episode_seconds', 'Wall time of an episode attempt, by phase'],
  active: ['karotte_episodes_active', 'Episodes running now'],
  stalled: ['karotte_stalled_seen_total', 'Jobs this worker saw come back from a dead worker'],
  lockLost: [
    'karotte_lock_lost_total',
    'Episodes aborted because their lock was lost, by how it was noticed',
  ],
  rejected: [
    'karotte_fenced_write_rejected_total',
    'Results or state moves Redis refused because the lock was gone',
  ],
  reclaimed: ['karotte_leftovers_reclaimed_total', 'Leftovers of dead harnesses reclaimed, by kind'],
  teardown: ['karotte_teardown_incomplete_total', 'Episodes whose teardown left something behind'],
  reconnects: ['karotte_redis_reconnects_total', 'Redis connection errors seen'],
  lag: ['karotte_event_loop_lag_seconds', 'Event loop delay, p99 over the last interval'],
  refused: ['karotte_jobs_refused_total', 'Jobs failed at once: bad payload, unknown task, digest mismatch'],
  handedBack: ['karotte_jobs_handed_back_total', 'Jobs handed back to the queue untouched (drain, fence)'],
  ready: ['karotte_worker_ready', '1 when the worker takes jobs'],
} as const;

/**
 * A worker of `karotte worker`: takes episode jobs from a BullMQ queue and runs each in a fresh
 * sandbox with core's `runEpisode`, in this process (never in a BullMQ child, which a SIGKILL
 * would orphan). Before the first job it reclaims what a predecessor on this host left behind.
 *
 * - A verdict (`passed`, `failed`) is the job's return value: stored by BullMQ under the job's
 *   lock, never retried.
 * - A host fault (`error`) is thrown, so BullMQ retries it (the job's `attempts`); on the last
 *   attempt it is returned as the result.
 * - A bad payload, an unknown task or a digest mismatch fails the job at once.
 * - Fencing: its own lease timer aborts an episode whose lock has gone `fenceFraction·lockMs`
 *   without a confirmed renewal (BullMQ's `lockRenewalFailed` comes only once Redis answers
 *   again), and every write of an attempt carries its lock token, so Redis refuses the result
 *   of an attempt whose lock is gone.
 */
export function createWorker(options: WorkerOptions): DispatchWorker {
  const o = parseOptions(workerOptionsSchema, options, 'worker options');
  const name = o.name ?? os.hostname();
  const createWorld = o.createWorld ?? createSandboxWorld;
  const metrics = new Metrics();
  const leases = new Map<string, Lease>();
  const emit = (event: Omit<WorkerEvent, 'at'>): void => {
    o.onEvent?.({ at: Date.now(), ...event } as WorkerEvent);
  };
  const fenceAfterMs = o.lockMs * o.fenceFraction;
  let worker: Worker | undefined;
  let queue: Queue | undefined;
  let tasks: TaskStore | undefined;
  let health: HealthServer | undefined;
  let started = false;
  let draining = false;
  let connected = false;
  let taken = 0;
  let lastActivityAt = Date.now();
  let resolveClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let drainPromise: Promise<void> | undefined;
  const timers: NodeJS.Timeout[] = [];
  const lag = monitorEventLoopDelay({ resolution: 20 });

  for (const status of ['passed', 'failed', 'error'])
    metrics.declare(M.episodes[0], M.episodes[1], 'counter', { queue: o.queue, status });
  for (const how of ['renewal', 'watchdog'])
    metrics.declare(M.lockLost[0], M.lockLost[1], 'counter', { how });
  metrics.declare(M.stalled[0], M.stalled[1], 'counter');
  metrics.declare(M.rejected[0], M.rejected[1], 'counter');
  metrics.declare(M.teardown[0], M.teardown[1], 'counter');
  metrics.declare(M.reconnects[0], M.reconnects[1], 'counter');
  metrics.declare(M.refused[0], M.refused[1], 'counter');
  metrics.declare(M.handedBack[0], M.handedBack[1], 'counter');

  const isReady = (): boolean => started && connected && !draining;
  // Readiness follows Redis: one small command at a time, each second; no answer within 2 s
  // (Redis down, or a silent partition) is not ready, until one answers again.
  let probing = false;
  const probeRedis = (): void => {
    if (probing || queue === undefined) return;
    probing = true;
    const answered = queue.getJobCounts('active').then(
      () => true,
      () => false,
    );
    void bounded(answered, 2_000).then((r) => {
      if (r !== true) connected = false;
    });
    void answered.then((ok) => {
      connected = ok;
      probing = false;
    });
  };
  const refreshGauges = (): void => {
    metrics.set(M.active[0], M.active[1], leases.size);
    metrics.set(M.ready[0], M.ready[1], isReady() ? 1 : 0);
    metrics.set(M.lag[0], M.lag[1], lag.percentile(99) / 1e9);
  };

  const fence = (lease: Lease, reason: FenceReason): void => {
    if (lease.reason !== null) return;
    lease.reason = reason;
    if (reason === 'watchdog' || reason === 'renewal') {
      metrics.inc(M.lockLost[0], M.lockLost[1], { how: reason });
      emit({
        event: 'fenced',
        jobId: lease.jobId,
        token: lease.token,
        how: reason,
        sinceRenewalMs: Date.now() - lease.lastRenewedAt,
      });
    }
    lease.controller.abort(new DispatchError('ABORTED', `episode ${lease.jobId} stopped: ${reason}`));
  };

  const refuse = (job: Job, token: string, code: string, message: string): never => {
    metrics.inc(M.refused[0], M.refused[1]);
    emit({ event: 'refused', jobId: job.id ?? '', token, code, message });
    throw new UnrecoverableError(`${code}: ${message}`);
  };

  const process_ = async (job: Job, token?: string, signal?: AbortSignal): Promise<JobResult> => {
    const attemptToken = token ?? '';
    const startedAt = Date.now();
    taken += 1;
    lastActivityAt = startedAt;
    emit({
      event: 'started',
      jobId: job.id ?? '',
      token: attemptToken,
      attemptsMade: job.attemptsMade,
      attemptsStarted: job.attemptsStarted,
      stalledCounter: job.stalledCounter,
      queuedMs: startedAt - job.timestamp,
    });
    if (o.maxEpisodes !== undefined && taken >= o.maxEpisodes) void drain();
    let payload: JobPayload;
    try {
      payload = parsePayload(job.data);
    } catch (error) {
      return refuse(
        job,
        attemptToken,
        'INVALID_PAYLOAD',
        error instanceof Error ? error.message : String(error),
      );
    }
    if (payload.episodeId !== job.id)
      refuse(
        job,
        attemptToken,
        'INVALID_PAYLOAD',
        `episodeId ${payload.episodeId} is not the job id ${job.id}`,
      );
    let stored;
    try {
      stored = await tasks!.get(payload.task.id);
    } catch (error) {
      refuse(job, attemptToken, 'INVALID_TASK', error instanceof Error ? error.message : String(error));
    }
    if (stored === null || stored === undefined)
      return refuse(
        job,
        attemptToken,
        'TASK_UNKNOWN',
        `this worker has no task ${payload.task.id} in ${o.tasksDir}`,
      );
    if (payload.task.digest !== undefined && payload.task.digest !== stored.digest)
      refuse(
        job,
        attemptToken,
        'TASK_DIGEST_MISMATCH',
        `task ${payload.task.id} here is ${stored.digest}, the job asks for ${payload.task.digest}`,
      );

    let agent: Agent;
    let maxTurns: number | undefined = payload.maxTurns;
    if (payload.agent.kind === 'replay') {
      agent = createReplayAgent(payload.agent.messages);
      // The replay ends the episode (contract section 5), not a turn limit below its length.
      maxTurns ??= Math.max(payload.agent.messages.length, 1);
    } else {
      const endpoint = o.endpoints[payload.agent.endpoint];
      if (endpoint === undefined) {
        return refuse(
          job,
          attemptToken,
          'ENDPOINT_UNKNOWN',
          `this worker has no endpoint ${payload.agent.endpoint}`,
        );
      }
      try {
        agent = await createOpenAIAgent({
          model: payload.agent.model,
          baseURL: endpoint.baseURL,
          ...(endpoint.apiKeyFile === undefined
            ? endpoint.apiKeyEnv === undefined
              ? {}
              : { apiKeyEnv: endpoint.apiKeyEnv }
            : { apiKeyFile: endpoint.apiKeyFile }),
          ...(payload.agent.sampling === undefined ? {} : { sampling: payload.agent.sampling }),
        });
      } catch (error) {
        // This worker cannot make the agent (its key is missing): a fault of this host, so
        // another worker may take the job.
        throw new DispatchError(
          'HOST_FAULT',
          `HOST_FAULT: AGENT_UNAVAILABLE: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
    }
    const lease: Lease = {
      jobId: job.id ?? '',
      token: attemptToken,
      controller: new AbortController(),
      lastRenewedAt: startedAt,
      reason: null,
    };
    leases.set(lease.jobId, lease);
    refreshGauges();
    if (draining && o.drainTimeoutMs === 0) fence(lease, 'drain');
    const onCancel = (): void => {
      fence(lease, 'cancel');
    };
    signal?.addEventListener('abort', onCancel, { once: true });
    const outDir = path.join(
      o.artifactsDir,
      payload.episodeId,
      attemptDirName(attemptToken, job.attemptsStarted),
    );
    let result: EpisodeResult;
    try {
      result = await runEpisode(stored.task, agent, {
        outDir,
        createWorld,
        abortSignal: lease.controller.signal,
        ...(maxTurns === undefined ? {} : { maxTurns }),
      });
    } finally {
      signal?.removeEventListener('abort', onCancel);
      leases.delete(lease.jobId);
      lastActivityAt = Date.now();
      refreshGauges();
      await agent.close?.();
    }
    metrics.observe(M.seconds[0], M.seconds[1], (Date.now() - startedAt) / 1000, { phase: 'attempt' });
    if (result.error?.code === 'TEARDOWN_INCOMPLETE') metrics.inc(M.teardown[0], M.teardown[1]);

    if (lease.reason !== null) {
      // Aborted by a drain or a fence: hand the job back untouched (attempts not counted). Redis
      // checks the token, so an attempt whose lock is gone is refused here too.
      const moved = await bounded(
        job.moveToWait(attemptToken).then(
          () => 'ok' as const,
          (error: unknown) => error,
        ),
        o.lockMs,
      );
      if (moved === 'ok') {
        metrics.inc(M.handedBack[0], M.handedBack[1]);
        emit({ event: 'handed_back', jobId: lease.jobId, token: attemptToken, reason: lease.reason });
        throw new WaitingError();
      }
      if (moved !== 'timeout') noteRejected(moved, lease.jobId, attemptToken);
      throw new DispatchError(
        'LOCK_LOST',
        `LOCK_LOST: episode ${lease.jobId} stopped (${lease.reason}); its attempt holds no result`,
      );
    }

    const attempts = job.opts.attempts ?? 1;
    if (result.status === 'error' && job.attemptsMade + 1 < attempts) {
      emit({
        event: 'host_fault',
        jobId: lease.jobId,
        token: attemptToken,
        code: result.error?.code ?? 'INTERNAL',
        message: result.error?.message ?? '',
        attemptsMade: job.attemptsMade,
      });
      throw new DispatchError(
        'HOST_FAULT',
        `HOST_FAULT: ${result.error?.code ?? 'INTERNAL'}: ${result.error?.message ?? ''}`,
      );
    }
    return {
      schema: PAYLOAD_SCHEMA_VERSION,
      runId: payload.runId,
      episodeId: payload.episodeId,
      attemptToken,
      worker: name,
      attemptsStarted: job.attemptsStarted,
      outDir,
      ...(payload.agent.kind === 'openai' && payload.agent.policyVersion !== undefined
        ? { policyVersion: payload.agent.policyVersion }
        : {}),
      transcript: await fileDigest(path.join(outDir, 'transcript.jsonl')),
      result: fitResult(result),
    };
  };

  const noteRejected = (error: unknown, jobId: string, token: string): void => {
    const message = error instanceof Error ? error.message : String(error);
    if (/Missing lock|Lock mismatch|Missing key/.test(message)) {
      metrics.inc(M.rejected[0], M.rejected[1]);
      emit({ event: 'write_rejected', jobId, token, message });
    }
  };

  const close = async (): Promise<void> => {
    // Stop fetching now; BullMQ's close then waits for the running jobs. The lease watchdog
    // keeps running meanwhile: a drained episode is still fenced if its lock goes.
    const closing = (worker?.close() ?? Promise.resolve()).then(
      () => 'ok' as const,
      (error: unknown) => error,
    );
    while (leases.size > 0) await new Promise((r) => setTimeout(r, 100));
    // The episodes are over; what is left is BullMQ's last writes (bounded by the lock) and
    // closing its connections, which hangs when Redis is away: then drop them.
    if ((await bounded(closing, o.lockMs + 10_000)) === 'timeout' && worker !== undefined)
      await bounded(
        worker.disconnect().catch(() => undefined),
        5_000,
      );
    for (const t of timers) clearInterval(t);
    lag.disable();
    if ((await bounded(queue?.close().catch(() => undefined) ?? Promise.resolve(), 5_000)) === 'timeout')
      await bounded(queue?.disconnect().catch(() => undefined) ?? Promise.resolve(), 5_000);
    await health?.close();
    emit({ event: 'closed' });
    resolveClosed();
  };

  const drain = (): Promise<void> => {
    if (drainPromise !== undefined) return drainPromise;
    draining = true;
    refreshGauges();
    emit({ event: 'draining', active: leases.size, drainTimeoutMs: o.drainTimeoutMs });
    if (!started) {
      drainPromise = close();
      return drainPromise;
    }
    const timer = setTimeout(() => {
      for (const lease of leases.values()) fence(lease, 'drain');
    }, o.drainTimeoutMs);
    drainPromise = close().finally(() => {
      clearTimeout(timer);
    });
    return drainPromise;
  };

  const start = async (): Promise<void> => {
    if (started || worker !== undefined)
      throw new DispatchError('DISPATCH_STATE', 'the worker was started already');
    await fs.mkdir(o.artifactsDir, { recursive: true, mode: 0o700 });
    tasks = await TaskStore.open(o.tasksDir);
    // Leftovers first: a predecessor SIGKILLed on this host left sandboxes that must go
    // before this worker makes its own (they hold uids, cgroups, links).
    const recover =
      o.recover ?? (process.getuid?.() === 0 ? () => recoverLeftovers() : () => Promise.resolve(null));
    let recovered: unknown;
    try {
      recovered = await recover();
    } catch (error) {
      throw new DispatchError(
        'LEFTOVERS_UNRECLAIMABLE',
        `cannot reclaim the leftovers of an earlier worker: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    const counts = summarizeRecovery(recovered);
    for (const [kind, n] of Object.entries(counts)) metrics.inc(M.reclaimed[0], M.reclaimed[1], { kind }, n);
    emit({ event: 'reclaimed', ...counts });
    if (o.startupCheck) {
      const report = await checkHost();
      if (!report.ok) {
        const weak = report.defenses.filter((d) => d.contract !== 'prevented' && d.name !== 'rootless_tier');
        throw new DispatchError(
          'HOST_UNFIT',
          `this host cannot confine every episode: ${weak.map((d) => `${d.name} (${d.reason})`).join('; ') || 'grader interpreter untrusted'}`,
        );
      }
    }
    const connection = workerConnection(o.redis);
    queue = new Queue(o.queue, { connection, prefix: o.prefix });
    queue.on('error', () => undefined);
    worker = new Worker(o.queue, process_, {
      connection,
      prefix: o.prefix,
      autorun: false,
      concurrency: o.concurrency,
      name,
      lockDuration: o.lockMs,
      // Renew every quarter of the lock (BullMQ's default is half): a renewal the watchdog has
      // not seen for fenceFraction of the lock then means Redis is away, not a slow timer.
      lockRenewTime: Math.floor(o.lockMs / 4),
      stalledInterval: o.stalledMs,
      maxStalledCount: o.maxStalled,
      maxStartedAttempts: o.maxStartedAttempts,
      // A drain must not wait 5 s for an empty queue's blocking call.
      drainDelay: 1,
    });
    worker.on('locksRenewed', ({ jobIds }: { jobIds: string[] }) => {
      const now = Date.now();
      for (const id of jobIds) {
        const lease = leases.get(id);
        if (lease !== undefined) lease.lastRenewedAt = now;
      }
    });
    worker.on('lockRenewalFailed', (jobIds: string[]) => {
      for (const id of jobIds) {
        const lease = leases.get(id);
        if (lease !== undefined) fence(lease, 'renewal');
      }
    });
    worker.on('stalled', (jobId: string) => {
      metrics.inc(M.stalled[0], M.stalled[1]);
      emit({ event: 'stalled_seen', jobId });
    });
    worker.on('completed', (job: Job, value: JobResult) => {
      const status = value.result.status;
      metrics.inc(M.episodes[0], M.episodes[1], { queue: o.queue, status });
      emit({
        event: 'completed',
        jobId: job.id ?? '',
        token: value.attemptToken,
        status,
        score: value.result.score,
      });
    });
    worker.on('error', (error: Error) => {
      const message = error.message;
      const jobId = /job ([a-z0-9-]+)/.exec(message)?.[1] ?? '';
      if (/Missing lock|Lock mismatch/.test(message)) noteRejected(error, jobId, '');
      else {
        metrics.inc(M.reconnects[0], M.reconnects[1]);
        emit({ event: 'redis_error', message: message.slice(0, 500) });
      }
    });
    // Redis may be away at start: bounded, so a worker pointed at nothing exits (1) saying so.
    const up = await bounded(
      worker.waitUntilReady().then(
        () => 'ok' as const,
        (error: unknown) => error,
      ),
      o.connectTimeoutMs,
    );
    if (up !== 'ok') {
      await worker.close(true).catch(() => undefined);
      await queue.close().catch(() => undefined);
      worker = undefined;
      throw new DispatchError(
        'REDIS_UNAVAILABLE',
        `Redis at ${o.redis.host}:${o.redis.port} did not answer within ${o.connectTimeoutMs} ms`,
        up === 'timeout' ? {} : { cause: up },
      );
    }
    connected = true;
    lag.enable();
    // The lease watchdog: BullMQ renews about every lockMs/4 (lockRenewTime); a renewal that has not
    // been confirmed for fenceFraction·lockMs means the lock may be gone, and another worker
    // may already run the episode: stop this copy now, before its lock is sure to be lost.
    const watchdogMs = Math.max(50, Math.min(250, Math.floor(o.lockMs / 20)));
    timers.push(
      setInterval(() => {
        const now = Date.now();
        for (const lease of leases.values())
          if (lease.reason === null && now - lease.lastRenewedAt > fenceAfterMs) fence(lease, 'watchdog');
      }, watchdogMs),
      setInterval(() => {
        probeRedis();
        refreshGauges();
        lag.reset();
      }, 1_000),
    );
    if (o.idleMs !== undefined) {
      const idleMs = o.idleMs;
      timers.push(
        setInterval(
          () => {
            if (draining || leases.size > 0 || Date.now() - lastActivityAt < idleMs) return;
            void queue!
              .getJobCounts('wait', 'prioritized', 'delayed', 'active')
              .then((c) => {
                if (Object.values(c).every((n) => n === 0) && leases.size === 0) void drain();
              })
              .catch(() => undefined);
          },
          Math.min(idleMs, 1_000),
        ),
      );
    }
    if (o.metricsPort !== undefined)
      health = await serveHealth(
        {
          healthy: () => true,
          ready: isReady,
          metrics: () => {
            refreshGauges();
            return metrics.render();
          },
        },
        o.metricsPort,
        o.metricsHost,
      );
    started = true;
    refreshGauges();
    emit({ event: 'ready', name, concurrency: o.concurrency, queue: o.queue, tasks: tasks.ids() });
    void worker.run().catch((error: unknown) => {
      emit({ event: 'redis_error', message: error instanceof Error ? error.message : String(error) });
    });
  };

  return {
    start,
    drain,
    handBack: () => {
      for (const lease of leases.values()) fence(lease, 'drain');
    },
    closed,
    ready: isReady,
    active: () => leases.size,
    metrics,
    healthPort: () => health?.port,
    name,
  };
}

/** Counts per kind from core's recovery report (`LeftoverReport`), for the log and metrics. */
function summarizeRecovery(report: unknown): Record<string, number> {
  if (report === null || typeof report !== 'object') return {};
  const out: Record<string, number> = {};
  const walk = (value: unknown, prefix: string): void => {
    if (Array.isArray(value)) out[prefix] = (out[prefix] ?? 0) + value.length;
    else if (typeof value === 'number' && prefix !== '') out[prefix] = value;
    else if (value !== null && typeof value === 'object')
      for (const [k, v] of Object.entries(value)) walk(v, prefix === '' ? k : `${prefix}_${k}`);
  };
  walk(report, '');
  return out;
}
