import { randomUUID, randomInt } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { KarotteError, parseOptions } from '@karotte/base';
import {
  CoreError,
  createEpisode,
  createSandboxWorld,
  createSandboxWorldPool,
  createToolProfile,
  loadTask,
  TOOL_PROFILE_NAMES,
  type SandboxWorldPool,
  type Task,
  type WorldFactory,
} from '@karotte/core';
import { ServerError } from './errors.js';
import { worldFingerprint } from './fingerprint.js';
import { authorized, digestToken, HttpProblem, parseBody, readBody, sendJson, sendProblem } from './http.js';
import { createMcpEndpoint, type McpTransport } from './mcp.js';
import { openApiDocument } from './openapi.js';
import { createOpenEnvEndpoint } from './openenv.js';
import {
  createEpisodeRequestSchema,
  createGroupRequestSchema,
  DEFAULT_MAX_BODY_BYTES,
  finishRequestSchema,
  MAX_GROUP_SIZE,
  PROTOCOL_VERSION,
  runRequestSchema,
  turnRequestSchema,
  type CreateEpisodeRequest,
} from './schemas.js';
import { chatTool, Session } from './session.js';

/** Options of {@link createEnvironmentServer}. */
export const environmentServerOptionsSchema = z
  .object({
    /** A directory of task directories (contract section 3); a task is named by its `id`. */
    tasksDir: z.string().min(1),
    /** The bearer token every request must carry. */
    token: z.string().min(1).max(4096),
    /** Episodes alive at once; past it a create is a 503 with `Retry-After`. @default 8 */
    maxEpisodes: z.number().int().min(1).max(4096).default(8),
    /** An episode untouched this long is cancelled and torn down, in milliseconds. @default 600000 */
    idleTimeoutMs: z.number().int().min(100).max(86_400_000).default(600_000),
    /** Largest request body, in bytes. @default 4194304 */
    maxBodyBytes: z
      .number()
      .int()
      .min(1024)
      .max(256 * 1024 * 1024)
      .default(DEFAULT_MAX_BODY_BYTES),
    /** Seconds a 503 tells the client to wait (`Retry-After`). @default 1 */
    retryAfterSeconds: z.number().int().min(1).max(3600).default(1),
    /** Where episodes' transcripts and results go while they live; a fresh private directory when absent. */
    stateDir: z.string().min(1).optional(),
    /** More host paths every student must never reach (the token file, the socket's directory). @default [] */
    hiddenPaths: z.array(z.string().min(1)).default([]),
    /**
     * How long an episode whose OpenEnv connection broke waits for a reset with its episodeId
     * before it is cancelled, in milliseconds (never longer than `idleTimeoutMs`). @default 30000
     */
    reconnectGraceMs: z.number().int().min(0).max(86_400_000).default(30_000),
    /** OpenEnv WebSocket connections open at once; past it an upgrade is a 503. @default 4 x maxEpisodes + 16 */
    maxConnections: z.number().int().min(1).max(65_536).optional(),
    /**
     * Sandboxes kept made and verified ahead of the episodes, per task configuration, and
     * grader sandboxes per step judge (`createSandboxWorldPool` of `@karotte/core`; each is
     * fresh and used once), drained by `close()`. Only for the default worlds: a `createWorld`
     * of the caller's makes its own.
     * @default 0
     */
    warmPool: z.number().int().min(0).max(64).default(0),
  })
  .strict();

/** What {@link createEnvironmentServer} takes. */
export type EnvironmentServerOptions = z.input<typeof environmentServerOptionsSchema> & {
  /**
   * Builds each episode's world. @default `createSandboxWorld` with the tasks directory, the
   * state directory and `hiddenPaths` hidden.
   */
  readonly createWorld?: WorldFactory;
};

/** Where {@link EnvironmentServer.listen} listens: a loopback TCP address or a unix socket (made mode 0600). */
export type ListenTarget = { readonly host: string; readonly port: number } | { readonly socket: string };

/** A running (or ready) environment server. */
export interface EnvironmentServer {
  /** The task ids served. */
  readonly taskIds: readonly string[];
  /** Episodes alive now (being built, taking turns, finishing). */
  readonly liveEpisodes: number;
  /**
   * Serve the tools of the live episode `episodeId` over an MCP transport of the caller's: an
   * agent the harness started takes them on its stdio, with no port at all
   * (`new StdioServerTransport(agent.stdout, agent.stdin)` of the SDK). Every `tools/call` is a
   * turn, as on `/v1/episodes/{id}/mcp`; the transport is closed when the episode ends.
   */
  connectMcp(episodeId: string, transport: McpTransport): Promise<void>;
  /** The warm pool's counts (made, warm, cold, discarded, failed, idle), or null without `warmPool`. */
  warmPoolStats(): ReturnType<SandboxWorldPool['stats']> | null;
  /** Listen; resolves with the address (`127.0.0.1:<port>` or the socket path) once requests are accepted. */
  listen(target: ListenTarget): Promise<string>;
  /**
   * Stop accepting, cancel every live episode and tear its world down, close every connection.
   * Idempotent.
   */
  close(): Promise<void>;
}

/** Finished episodes kept for repeated finish and turn requests, oldest dropped first. */
const MAX_FINISHED_KEPT = 1024;

/** True for an address of the loopback interface. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  return net.isIPv4(host) && host.startsWith('127.');
}

/**
 * Create the environment server of contract section 9 (`karotte serve`): episodes of the tasks
 * in `tasksDir` driven over HTTP with a bearer token, exactly-once turns, groups, run mode and
 * event streams. Every task is loaded (and checked) here; nothing listens until `listen()`.
 */
export async function createEnvironmentServer(options: EnvironmentServerOptions): Promise<EnvironmentServer> {
  const { createWorld: givenWorld, ...rest } = options;
  const parsed = parseOptions(environmentServerOptionsSchema, rest, 'environment server options');
  if (givenWorld !== undefined && parsed.warmPool > 0) {
    throw new ServerError(
      'INVALID_OPTIONS',
      "warmPool applies to the default sandbox worlds only: a createWorld of the caller's makes its own (createSandboxWorldPool of @karotte/core)",
      { field: 'warmPool' },
    );
  }
  const tasks = await loadTasks(parsed.tasksDir);
  const ownState = parsed.stateDir === undefined;
  const stateDir = parsed.stateDir ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'karotte-serve-')));
  await fs.chmod(stateDir, 0o700);
  const tasksDir = await fs.realpath(parsed.tasksDir);
  const hiddenPaths = [tasksDir, stateDir, ...parsed.hiddenPaths];
  // Made lazily: nothing is warmed before the first episode of a configuration.
  const pool =
    givenWorld === undefined && parsed.warmPool > 0
      ? createSandboxWorldPool({ hiddenPaths, size: parsed.warmPool })
      : undefined;
  const createWorld: WorldFactory =
    givenWorld ?? pool?.createWorld ?? ((spec) => createSandboxWorld(spec, { hiddenPaths }));
  const tokenDigest = digestToken(parsed.token);
  const live = new Map<string, Session>();
  const finished = new Map<string, Session>();
  let reserved = 0;
  let closing: Promise<void> | undefined;
  /** Episodes being built (createMembers in flight), each with its abort: close() aborts and awaits them. */
  const building = new Map<Promise<unknown>, AbortController>();
  let listening = false;
  const reconnectGraceMs = Math.min(parsed.reconnectGraceMs, parsed.idleTimeoutMs);
  const mcp = createMcpEndpoint({ maxBodyBytes: parsed.maxBodyBytes });
  const openEnv = createOpenEnvEndpoint(
    {
      token: parsed.token,
      maxPayloadBytes: parsed.maxBodyBytes,
      maxConnections: parsed.maxConnections ?? parsed.maxEpisodes * 4 + 16,
      idleTimeoutMs: parsed.idleTimeoutMs,
    },
    {
      get taskIds() {
        return [...tasks.keys()];
      },
      async create(body) {
        const [created] = await createMembers(body, 1, null);
        return { session: live.get(created!.episodeId)!, created: created! };
      },
      live(episodeId) {
        const session = live.get(episodeId);
        return session === undefined || session.finished ? undefined : session;
      },
      async finish(session) {
        const result = await session.finish();
        await retire(session, false);
        return result;
      },
      cancel: (session) => retire(session, true),
    },
  );

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      sendProblem(res, asProblem(error));
    });
  });
  // A connection that never sends a whole request is dropped after these: it holds a socket,
  // never an episode.
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 5_000;
  server.on('upgrade', (req: http.IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => {
    if (openEnv.handleUpgrade(req, socket, head)) return;
    socket.on('error', () => undefined);
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });

  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const session of live.values()) {
        if (
          session.detachedSinceMs !== undefined &&
          !session.busy &&
          !session.finished &&
          now - Math.max(session.lastTouchedMs, session.detachedSinceMs) > reconnectGraceMs
        ) {
          session.emit('openenv_detached_timeout', { reconnectGraceMs });
          void retire(session, true);
          continue;
        }
        if (
          session.episode !== undefined &&
          !session.busy &&
          !session.finished &&
          now - session.lastTouchedMs > parsed.idleTimeoutMs
        ) {
          session.emit('idle_timeout', { idleTimeoutMs: parsed.idleTimeoutMs });
          void retire(session, true);
        }
      }
    },
    Math.max(
      50,
      Math.min(Math.floor(Math.min(parsed.idleTimeoutMs, Math.max(reconnectGraceMs, 200)) / 4), 5_000),
    ),
  );
  sweep.unref();

  function capacityLeft(): number {
    let alive = reserved;
    for (const session of live.values()) if (!session.finished) alive += 1;
    return parsed.maxEpisodes - alive;
  }

  async function retire(session: Session, cancel: boolean): Promise<void> {
    try {
      await (cancel ? session.cancel() : session.finish());
    } catch {
      // The episode recorded its own fault; the session still goes.
    }
    // After the episode ended: a tools/call in flight gets its answer first.
    mcp.closeEpisode(session.id);
    live.delete(session.id);
    finished.set(session.id, session);
    while (finished.size > MAX_FINISHED_KEPT) {
      const oldest = finished.keys().next().value as string;
      finished.delete(oldest);
      await fs.rm(path.join(stateDir, oldest), { recursive: true, force: true }).catch(() => undefined);
    }
  }

  function sessionOf(id: string): Session {
    const session = live.get(id) ?? finished.get(id);
    if (session === undefined || session.episode === undefined)
      throw new HttpProblem(404, 'EPISODE_NOT_FOUND', `no episode ${id}`);
    return session;
  }

  function taskOf(taskId: string): Task {
    const task = tasks.get(taskId);
    if (task === undefined) throw new HttpProblem(404, 'TASK_NOT_FOUND', `no task ${taskId}`, 'taskId');
    return task;
  }

  /** Build `size` episodes of one task and seed; each member's fingerprint is computed before its world. */
  async function createMembers(body: CreateEpisodeRequest, size: number, groupId: string | null) {
    const abort = new AbortController();
    const build = buildMembers(body, size, groupId, abort.signal);
    building.set(build, abort);
    try {
      return await build;
    } finally {
      building.delete(build);
    }
  }

  async function buildMembers(
    body: CreateEpisodeRequest,
    size: number,
    groupId: string | null,
    abortSignal: AbortSignal,
  ) {
    const task = taskOf(body.taskId);
    if (closing !== undefined)
      throw new HttpProblem(503, 'SHUTTING_DOWN', 'the server is shutting down', undefined, {
        'retry-after': String(parsed.retryAfterSeconds),
      });
    if (capacityLeft() < size) {
      throw new HttpProblem(
        503,
        'AT_CAPACITY',
        `${parsed.maxEpisodes} episodes are alive (the server's --max-episodes); retry later`,
        undefined,
        { 'retry-after': String(parsed.retryAfterSeconds) },
      );
    }
    reserved += size;
    const seed = body.seed ?? randomInt(0, 2 ** 31);
    const profile = createToolProfile(body.toolProfile ?? 'bash');
    const sessions: Session[] = [];
    try {
      const built = await Promise.allSettled(
        Array.from({ length: size }, async () => {
          const id = `ep_${randomUUID()}`;
          const fingerprint = await worldFingerprint(task, profile, seed);
          const session = new Session({
            id,
            groupId,
            taskId: task.id,
            steps: task.steps.length,
            seed,
            worldFingerprint: fingerprint,
          });
          // Aborted by close() while the episode is being built (the signal of its build).
          const episode = createEpisode(task, {
            abortSignal,
            outDir: path.join(stateDir, id),
            createWorld,
            ...(pool === undefined ? {} : { prepareJudge: pool.prepareJudge }),
            agentName: 'served',
            tools: profile,
            ...(body.maxTurns === undefined ? {} : { maxTurns: body.maxTurns }),
            onProgress: session.onProgress,
          });
          session.episode = episode;
          sessions.push(session);
          session.emit('episode_created', {
            taskId: task.id,
            seed,
            groupId,
            worldFingerprint: fingerprint,
          });
          await episode.start();
          return session;
        }),
      );
      const failure = built.find((b): b is PromiseRejectedResult => b.status === 'rejected');
      const fingerprints = new Set(sessions.map((s) => s.init.worldFingerprint));
      if (failure !== undefined || fingerprints.size > 1 || closing !== undefined) {
        await Promise.all(sessions.map((s) => s.cancel().catch(() => undefined)));
        await Promise.all(
          sessions.map((s) =>
            fs.rm(path.join(stateDir, s.id), { recursive: true, force: true }).catch(() => undefined),
          ),
        );
        // Built while the server stopped: torn down above, never handed out.
        if (closing !== undefined)
          throw new HttpProblem(503, 'SHUTTING_DOWN', 'the server is shutting down', undefined, {
            'retry-after': String(parsed.retryAfterSeconds),
          });
        if (failure !== undefined) {
          const error: unknown = failure.reason;
          const code = KarotteError.isInstance(error) ? error.code : 'EPISODE_START_FAILED';
          // The host's admission had no room in time: the same as being at capacity.
          const busy = code === 'ADMISSION_TIMEOUT' || code === 'HOST_BUSY';
          throw new HttpProblem(
            busy ? 503 : 500,
            code,
            `the episode could not start: ${error instanceof Error ? error.message : String(error)}`,
            undefined,
            busy ? { 'retry-after': String(parsed.retryAfterSeconds) } : {},
          );
        }
        throw new HttpProblem(
          500,
          'GROUP_INCOHERENT',
          `the group's members were built from different worlds (${[...fingerprints].join(', ')})`,
        );
      }
      for (const session of sessions) live.set(session.id, session);
      return sessions.map((session) => ({
        episodeId: session.id,
        groupId,
        taskId: task.id,
        seed,
        worldFingerprint: session.init.worldFingerprint,
        messages: [...session.episode!.messages],
        tools: session.episode!.tools.map(chatTool),
      }));
    } finally {
      reserved -= size;
    }
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.url?.startsWith('/openenv/') === true) {
      openEnvHttp(req, res);
      return;
    }
    if (!authorized(req, tokenDigest)) {
      req.resume();
      throw new HttpProblem(
        401,
        'UNAUTHORIZED',
        'a valid Authorization: Bearer <token> header is required',
        undefined,
        { 'www-authenticate': 'Bearer' },
      );
    }
    const url = new URL(req.url ?? '/', 'http://karotte.invalid');
    const parts = url.pathname.split('/').filter((p) => p !== '');
    const method = req.method ?? 'GET';
    const body = async <S extends z.ZodType>(schema: S): Promise<z.output<S>> =>
      parseBody(schema, await readBody(req, parsed.maxBodyBytes));
    const route = `${method} /${parts.map((p, i) => (i === 2 && parts[1] === 'episodes' ? '{id}' : i === 4 && parts[3] === 'turns' ? '{turnId}' : p)).join('/')}`;
    switch (route) {
      case 'GET /v1/capabilities': {
        sendJson(res, 200, {
          protocol: PROTOCOL_VERSION,
          toolProfiles: [...TOOL_PROFILE_NAMES],
          agents: ['driven', 'openai-compatible'],
          maxEpisodes: parsed.maxEpisodes,
          maxGroupSize: MAX_GROUP_SIZE,
          idleTimeoutMs: parsed.idleTimeoutMs,
          endpoints: { openenv: '/openenv/{token}/ws', mcp: '/v1/episodes/{id}/mcp' },
        });
        return;
      }
      case 'GET /v1/openapi.json': {
        sendJson(res, 200, openApiDocument());
        return;
      }
      case 'GET /v1/tasks': {
        sendJson(res, 200, {
          tasks: [...tasks.values()].map((t) => ({ id: t.id, steps: t.steps.length })),
        });
        return;
      }
      case 'POST /v1/episodes': {
        const request = await body(createEpisodeRequestSchema);
        const [episode] = await createMembers(request, 1, null);
        sendJson(res, 201, episode);
        return;
      }
      case 'POST /v1/groups': {
        const { size, ...request } = await body(createGroupRequestSchema);
        const groupId = `grp_${randomUUID()}`;
        const episodes = await createMembers(request, size, groupId);
        sendJson(res, 201, { groupId, worldFingerprint: episodes[0]!.worldFingerprint, episodes });
        return;
      }
      case 'POST /v1/episodes/{id}/turns': {
        const session = sessionOf(parts[2]!);
        const request = await body(turnRequestSchema);
        sendJson(res, 200, await session.turn(request));
        return;
      }
      case 'GET /v1/episodes/{id}/turns/{turnId}': {
        const session = sessionOf(parts[2]!);
        const answer = session.storedTurn(parts[4]!);
        if (answer === undefined)
          throw new HttpProblem(404, 'TURN_NOT_FOUND', `no turn ${parts[4]!} in episode ${session.id}`);
        sendJson(res, 200, await answer);
        return;
      }
      case 'POST /v1/episodes/{id}/finish': {
        const session = sessionOf(parts[2]!);
        await body(finishRequestSchema);
        const result = await session.finish();
        await retire(session, false);
        sendJson(res, 200, result);
        return;
      }
      case 'POST /v1/episodes/{id}/run': {
        const session = sessionOf(parts[2]!);
        const request = await body(runRequestSchema);
        const rollout = await session.run(request);
        await retire(session, false);
        sendJson(res, 200, rollout);
        return;
      }
      case 'DELETE /v1/episodes/{id}': {
        const session = sessionOf(parts[2]!);
        req.resume();
        await retire(session, true);
        res.writeHead(204).end();
        return;
      }
      case 'POST /v1/episodes/{id}/mcp':
      case 'GET /v1/episodes/{id}/mcp':
      case 'DELETE /v1/episodes/{id}/mcp': {
        await mcp.handle(sessionOf(parts[2]!), req, res);
        return;
      }
      case 'GET /v1/episodes/{id}/events': {
        streamEvents(sessionOf(parts[2]!), req, res, url);
        return;
      }
      default:
        req.resume();
        throw new HttpProblem(404, 'NOT_FOUND', `no route ${method} ${url.pathname}`);
    }
  }

  /**
   * Plain HTTP under `/openenv/<token>/`: `GET …/health` (what OpenEnv's providers poll), and
   * 426 for `…/ws` without an upgrade. The path's token stands for the bearer token.
   */
  function openEnvHttp(req: http.IncomingMessage, res: http.ServerResponse): void {
    req.resume();
    const parts = new URL(req.url ?? '/', 'http://karotte.invalid').pathname.split('/');
    if (parts.length !== 4 || !openEnv.tokenMatches(parts[2]!))
      throw new HttpProblem(401, 'UNAUTHORIZED', 'the token in the path is not the server’s');
    if (req.method === 'GET' && parts[3] === 'health') {
      sendJson(res, 200, { status: 'healthy' });
      return;
    }
    if (parts[3] === 'ws')
      throw new HttpProblem(426, 'UPGRADE_REQUIRED', 'this endpoint speaks WebSocket', undefined, {
        upgrade: 'websocket',
      });
    throw new HttpProblem(404, 'NOT_FOUND', `no route ${req.method ?? 'GET'} /openenv/<token>/${parts[3]!}`);
  }

  function streamEvents(
    session: Session,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
  ): void {
    req.resume();
    const fromText = url.searchParams.get('from');
    const lastId = req.headers['last-event-id'];
    let from = 0;
    if (typeof lastId === 'string' && /^\d+$/.test(lastId)) from = Number(lastId) + 1;
    if (fromText !== null) {
      if (!/^\d{1,15}$/.test(fromText))
        throw new HttpProblem(400, 'INVALID_REQUEST', 'from: a sequence number (an integer >= 0)', 'from');
      from = Number(fromText);
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    const write = (event: { seq: number; type: string }): void => {
      res.write(`id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    };
    const { events, dropped } = session.eventsFrom(from);
    if (dropped) res.write(`event: events_dropped\ndata: ${JSON.stringify({ from })}\n\n`);
    for (const event of events) write(event);
    if (session.finished) {
      res.end();
      return;
    }
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
    keepAlive.unref();
    const unsubscribe = session.subscribe((event) => {
      if (event === null) {
        clearInterval(keepAlive);
        res.end();
      } else write(event);
    });
    res.on('close', () => {
      clearInterval(keepAlive);
      unsubscribe();
    });
  }

  return {
    get taskIds() {
      return [...tasks.keys()];
    },
    get liveEpisodes() {
      return parsed.maxEpisodes - capacityLeft();
    },
    async connectMcp(episodeId, transport) {
      const session = live.get(episodeId);
      if (session === undefined || session.finished || session.episode === undefined)
        throw new ServerError('UNKNOWN_EPISODE', `no live episode ${episodeId}`, { field: 'episodeId' });
      await mcp.connect(session, transport);
    },
    async listen(target) {
      if (listening || closing !== undefined)
        throw new ServerError('SERVER_STATE', 'listen() was already called');
      listening = true;
      if ('socket' in target) {
        await removeStaleSocket(target.socket);
        await listenOn(server, { path: target.socket });
        // connect() on a unix socket needs write permission on it: 0600 leaves only the server's user.
        await fs.chmod(target.socket, 0o600);
        return target.socket;
      }
      if (!isLoopbackHost(target.host)) {
        throw new ServerError(
          'INVALID_OPTIONS',
          `${target.host} is not a loopback address: the server listens on loopback or a unix socket only`,
          { field: 'host' },
        );
      }
      await listenOn(server, { host: target.host, port: target.port });
      const address = server.address() as net.AddressInfo;
      return `${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
    },
    warmPoolStats() {
      return pool?.stats() ?? null;
    },
    close() {
      closing ??= (async () => {
        clearInterval(sweep);
        openEnv.close();
        const stopped = new Promise<void>((resolve) => {
          if (!server.listening) resolve();
          else
            server.close(() => {
              resolve();
            });
        });
        server.closeIdleConnections();
        // Episodes still being built stop, and tear down what they made, before the live ones go.
        for (const abort of building.values()) abort.abort();
        await Promise.allSettled([...building.keys()]);
        await Promise.all([...live.values()].map((session) => retire(session, true)));
        await mcp.close();
        server.closeAllConnections();
        await stopped;
        try {
          // The sandboxes made ahead, unused, are destroyed like any other.
          await pool?.close();
        } finally {
          if (ownState) await fs.rm(stateDir, { recursive: true, force: true });
        }
      })();
      return closing;
    },
  };
}

function listenOn(server: http.Server, options: net.ListenOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => {
      reject(
        new ServerError(
          'LISTEN_FAILED',
          `cannot listen on ${options.path ?? `${options.host}:${options.port}`}: ${error.message}`,
          { cause: error },
        ),
      );
    };
    server.once('error', onError);
    server.listen(options, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/** A socket file nothing listens on (a killed server's) is removed; anything else in the way is refused. */
async function removeStaleSocket(file: string): Promise<void> {
  let stats;
  try {
    stats = await fs.lstat(file);
  } catch {
    return;
  }
  if (!stats.isSocket())
    throw new ServerError('LISTEN_FAILED', `${file} exists and is not a socket`, { field: 'socket' });
  const alive = await new Promise<boolean>((resolve) => {
    const probe = net.connect(file);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => {
      resolve(false);
    });
  });
  if (alive) throw new ServerError('LISTEN_FAILED', `another server listens on ${file}`, { field: 'socket' });
  await fs.rm(file, { force: true });
}

async function loadTasks(tasksDir: string): Promise<Map<string, Task>> {
  let entries;
  try {
    entries = await fs.readdir(tasksDir, { withFileTypes: true });
  } catch (error) {
    throw new ServerError('INVALID_OPTIONS', `cannot read the tasks directory ${tasksDir}`, {
      field: 'tasksDir',
      cause: error,
    });
  }
  const tasks = new Map<string, Task>();
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const dir = path.join(tasksDir, entry.name);
    // A symlinked task directory is followed (loadTask resolves it to its real path).
    const isDir =
      entry.isDirectory() ||
      (entry.isSymbolicLink() &&
        (await fs.stat(dir).then(
          (s) => s.isDirectory(),
          () => false,
        )));
    if (!isDir) continue;
    const hasTask = await fs.stat(path.join(dir, 'task.json')).then(
      () => true,
      () => false,
    );
    if (!hasTask) continue;
    let task: Task;
    try {
      task = await loadTask(dir);
    } catch (error) {
      const field = CoreError.isInstance(error) && error.field !== undefined ? ` (field ${error.field})` : '';
      throw new ServerError(
        'INVALID_TASKS',
        `invalid task ${entry.name}${field}: ${error instanceof Error ? error.message : String(error)}`,
        { field: entry.name, cause: error },
      );
    }
    if (tasks.has(task.id))
      throw new ServerError('INVALID_TASKS', `two tasks have the id ${task.id}`, { field: entry.name });
    tasks.set(task.id, task);
  }
  if (tasks.size === 0)
    throw new ServerError(
      'INVALID_TASKS',
      `${tasksDir} holds no task directory (a directory with task.json)`,
      { field: 'tasksDir' },
    );
  return tasks;
}

function asProblem(error: unknown): HttpProblem {
  if (error instanceof HttpProblem) return error;
  const code = KarotteError.isInstance(error) ? error.code : 'INTERNAL';
  return new HttpProblem(500, code, error instanceof Error ? error.message : String(error));
}
