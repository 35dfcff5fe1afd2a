// The OpenEnv WebSocket endpoint of `karotte serve` (contract section 15):
// `ws://<address>/openenv/<token>/ws`, one connection driving one episode at a time, mapped onto
// the same sessions (exactly-once turns, groups, results) as the HTTP protocol of section 9.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { AssistantMessage } from '@karotte/core';
import { digestToken, HttpProblem } from './http.js';
import {
  errorFrame,
  openEnvCodeOf,
  parseOpenEnvFrame,
  type OpenEnvErrorData,
  type OpenEnvRequest,
  type OpenEnvResetData,
} from './openenv-protocol.js';
import type { CreateEpisodeRequest, ServedResult, TurnAnswer } from './schemas.js';
import { chatTool, type Session } from './session.js';

/** What the endpoint needs of the server: its sessions, made and ended the server's way. */
export interface OpenEnvHost {
  readonly taskIds: readonly string[];
  /** Create one episode (a group of one), as `POST /v1/episodes` does; throws an HttpProblem. */
  create(body: CreateEpisodeRequest): Promise<{ session: Session; created: Record<string, unknown> }>;
  /** A live (unfinished) episode by id. */
  live(episodeId: string): Session | undefined;
  /** Collect, grade, tear down; the result. */
  finish(session: Session): Promise<ServedResult>;
  /** Cancel and tear down. */
  cancel(session: Session): Promise<void>;
}

export interface OpenEnvEndpointOptions {
  readonly token: string;
  /** The largest frame a client may send, in bytes; past it the connection is closed with 1009. */
  readonly maxPayloadBytes: number;
  /** Connections open at once; past it an upgrade is refused with 503. */
  readonly maxConnections: number;
  /** A connection that sends nothing for this long is closed (1000, its episode cancelled). */
  readonly idleTimeoutMs: number;
}

export interface OpenEnvEndpoint {
  /** The HTTP server's `upgrade` listener for paths under `/openenv/`; false for other paths. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** True when `segment` (the path's token) is the server's token, compared in constant time. */
  tokenMatches(segment: string): boolean;
  readonly connections: number;
  /** Close every connection (1001) and stop accepting. */
  close(): void;
}

/** Frames a connection may have waiting behind the one being answered. */
const MAX_PENDING_FRAMES = 8;

function refuseUpgrade(socket: Duplex, status: number, reason: string, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Cache-Control: no-store\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 1_000).unref();
}

/**
 * True when an upgrade's Origin is absent, or is the server's own loopback address exactly as
 * the request's Host names it (`http://127.0.0.1:8765` for Host `127.0.0.1:8765`). A page of
 * another site, another port or a rebound name has another origin.
 */
export function ownOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (origin === undefined) return true;
  if (host === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'ws:') return false;
  if (url.host !== host.toLowerCase()) return false;
  const name = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return name === 'localhost' || name === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/** Create the endpoint; give its `handleUpgrade` to the HTTP server's `upgrade` event. */
export function createOpenEnvEndpoint(options: OpenEnvEndpointOptions, host: OpenEnvHost): OpenEnvEndpoint {
  const tokenDigest = digestToken(options.token);
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxPayloadBytes,
    perMessageDeflate: false,
    clientTracking: true,
  });
  // No heartbeat: on loopback and unix sockets a peer that dies closes its socket (the close
  // event comes at once), and a client that does not read between steps (a synchronous one
  // while its model samples) must not be dropped for an unanswered ping.
  let closed = false;
  const tokenMatches = (segment: string): boolean => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return false;
    }
    return timingSafeEqual(digestToken(decoded), tokenDigest);
  };
  return {
    tokenMatches,
    get connections() {
      return wss.clients.size;
    },
    handleUpgrade(req, socket, head) {
      const url = new URL(req.url ?? '/', 'http://karotte.invalid');
      const parts = url.pathname.split('/');
      if (parts[1] !== 'openenv') return false;
      socket.on('error', () => undefined);
      if (parts.length !== 4 || parts[3] !== 'ws') {
        refuseUpgrade(socket, 404, 'Not Found', 'NOT_FOUND', `no WebSocket endpoint ${url.pathname}`);
        return true;
      }
      // The token first: nothing about the server is told to a client without it.
      if (!tokenMatches(parts[2]!)) {
        refuseUpgrade(
          socket,
          401,
          'Unauthorized',
          'UNAUTHORIZED',
          'the token in the path is not the server’s',
        );
        return true;
      }
      // A browser sends Origin on every WebSocket (and WebSockets are not bound by CORS): no page
      // may drive episodes. OpenEnv's clients (Python websockets, Node.js ws) send none; some
      // clients (Python's websocket-client) send the server's own loopback address, allowed.
      if (!ownOrigin(req.headers.origin, req.headers.host)) {
        refuseUpgrade(
          socket,
          403,
          'Forbidden',
          'ORIGIN_REFUSED',
          'an Origin other than the server’s own loopback address (a browser page) is refused',
        );
        return true;
      }
      if (closed) {
        refuseUpgrade(socket, 503, 'Service Unavailable', 'SHUTTING_DOWN', 'the server is shutting down');
        return true;
      }
      if (wss.clients.size >= options.maxConnections) {
        refuseUpgrade(
          socket,
          503,
          'Service Unavailable',
          'AT_CAPACITY',
          `${options.maxConnections} OpenEnv connections are open; retry later`,
        );
        return true;
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        new OpenEnvConnection(ws, host, options.idleTimeoutMs);
      });
      return true;
    },
    close() {
      closed = true;
      for (const ws of wss.clients) ws.close(1001, 'server shutting down');
      // Whatever did not close within a second is cut.
      setTimeout(() => {
        for (const ws of wss.clients) ws.terminate();
      }, 1_000).unref();
      wss.close();
    },
  };
}

function problemData(error: unknown): OpenEnvErrorData {
  if (error instanceof HttpProblem) {
    return {
      code: openEnvCodeOf(error.status, error.code),
      message: error.message,
      reason: error.code,
      ...(error.field === undefined ? {} : { field: `data.${error.field}` }),
    };
  }
  return {
    code: 'EXECUTION_ERROR',
    message: error instanceof Error ? error.message : String(error),
    reason: 'INTERNAL',
  };
}

/** One OpenEnv connection: its frames answered in order, at most one episode driven at a time. */
class OpenEnvConnection {
  private session: Session | undefined;
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;
  private gone = false;
  private closeRequested = false;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ws: WebSocket,
    private readonly host: OpenEnvHost,
    private readonly idleTimeoutMs: number,
  ) {
    ws.on('message', (data, isBinary) => {
      this.onFrame(data, isBinary);
    });
    ws.on('close', (code) => {
      this.onGone(code);
    });
    // A frame past maxPayload or a protocol fault: ws closes the socket (1009, 1002); close follows.
    ws.on('error', () => undefined);
    this.armIdle();
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.pending > 0) {
        this.armIdle();
        return;
      }
      this.closeRequested = true;
      void this.endEpisode().finally(() => {
        this.ws.close(1000, 'idle');
      });
    }, this.idleTimeoutMs);
    this.idleTimer.unref();
  }

  private send(frame: string): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(frame);
  }

  private onFrame(data: RawData, isBinary: boolean): void {
    this.armIdle();
    if (isBinary) {
      this.send(
        errorFrame({ code: 'VALIDATION_ERROR', message: 'frames are JSON text; a binary frame was sent' }),
      );
      return;
    }
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.from(data as ArrayBuffer).toString('utf8');
    const parsed = parseOpenEnvFrame(text);
    if (!parsed.ok) {
      this.send(errorFrame(parsed.error));
      return;
    }
    const request = parsed.request;
    if (request.type === 'close') {
      // Now, not behind a running step: the command is stopped, the world torn down.
      this.closeRequested = true;
      void this.endEpisode().finally(() => {
        this.ws.close(1000, 'closed');
      });
      return;
    }
    if (this.pending >= MAX_PENDING_FRAMES) {
      this.send(
        errorFrame({
          code: 'EXECUTION_ERROR',
          message: `${MAX_PENDING_FRAMES} frames are already waiting for an answer: wait for one`,
          reason: 'TOO_MANY_PENDING',
        }),
      );
      return;
    }
    this.pending += 1;
    this.chain = this.chain
      .then(() => this.answer(request))
      .catch((error: unknown) => {
        this.send(errorFrame(problemData(error)));
      })
      .finally(() => {
        this.pending -= 1;
      });
  }

  /** True while the socket is open: a reset elsewhere with its episode's id is refused. */
  get open(): boolean {
    return !this.gone && this.ws.readyState === this.ws.OPEN;
  }

  private async endEpisode(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    // Another connection took the episode over (this one's socket had broken): it is not ours to end.
    if (session?.driver !== this) return;
    session.driver = undefined;
    if (!session.finished) await this.host.cancel(session).catch(() => undefined);
  }

  private onGone(code: number): void {
    this.gone = true;
    clearTimeout(this.idleTimer);
    const session = this.session;
    if (session === undefined || session.finished || session.driver !== this) return;
    if (this.closeRequested || code === 1000) {
      // A clean close ends the episode with the connection.
      void this.endEpisode();
      return;
    }
    // A broken socket: a step in flight runs to its end (its answer stored under its turnId);
    // the episode waits out the reconnect grace for a reset with its episodeId, then is cancelled.
    session.driver = undefined;
    session.detachedSinceMs = Date.now();
  }

  private async answer(request: Exclude<OpenEnvRequest, { type: 'close' }>): Promise<void> {
    if (this.gone && request.type !== 'step') return;
    switch (request.type) {
      case 'reset':
        return this.reset(request.data);
      case 'step':
        return this.step(request.action);
      case 'state': {
        const s = this.session;
        this.send(
          JSON.stringify({
            type: 'state',
            data: {
              episode_id: s?.id ?? null,
              step_count: s?.turnsTaken ?? 0,
              ...(s === undefined
                ? {}
                : {
                    task_id: s.init.taskId,
                    seed: s.init.seed,
                    group_id: s.init.groupId,
                    world_fingerprint: s.init.worldFingerprint,
                    done: s.isDone,
                    remaining: s.remaining(),
                  }),
            },
          }),
        );
        return;
      }
    }
  }

  private async reset(data: OpenEnvResetData): Promise<void> {
    // A reset begins another episode: the one this connection drove is cancelled first.
    await this.endEpisode();
    let session: Session;
    let created: Record<string, unknown>;
    if (data.episodeId !== undefined) {
      const live = this.host.live(data.episodeId);
      if (live === undefined || live.episode === undefined)
        throw new HttpProblem(404, 'EPISODE_NOT_FOUND', `no live episode ${data.episodeId}`, 'episodeId');
      // A driver whose socket is no longer open (its close not yet seen) is taken over.
      const driver = live.driver as OpenEnvConnection | undefined;
      if (driver !== undefined && driver !== this && driver.open)
        throw new HttpProblem(
          409,
          'EPISODE_DRIVEN',
          `episode ${data.episodeId} is driven by another connection`,
          'episodeId',
        );
      session = live;
      created = {
        episodeId: live.id,
        groupId: live.init.groupId,
        taskId: live.init.taskId,
        seed: live.init.seed,
        worldFingerprint: live.init.worldFingerprint,
        // The conversation so far: a reconnecting client sees where it stopped.
        messages: [...live.episode.messages],
        tools: live.episode.tools.map(chatTool),
      };
    } else {
      let taskId = data.taskId;
      if (taskId === undefined) {
        if (this.host.taskIds.length !== 1)
          throw new HttpProblem(
            400,
            'INVALID_REQUEST',
            `taskId: the server has ${this.host.taskIds.length} tasks, name one (${this.host.taskIds.slice(0, 8).join(', ')})`,
            'taskId',
          );
        taskId = this.host.taskIds[0]!;
      }
      ({ session, created } = await this.host.create({
        taskId,
        ...(data.seed === undefined ? {} : { seed: data.seed }),
        ...(data.toolProfile === undefined ? {} : { toolProfile: data.toolProfile }),
        ...(data.maxTurns === undefined ? {} : { maxTurns: data.maxTurns }),
      }));
    }
    if (this.gone) {
      // The socket broke while the world was built: nobody knows this episode's id.
      if (data.episodeId === undefined) await this.host.cancel(session).catch(() => undefined);
      return;
    }
    session.driver = this;
    session.detachedSinceMs = undefined;
    session.touch();
    this.session = session;
    const { messages, tools, ...about } = created;
    this.send(
      JSON.stringify({
        type: 'observation',
        data: {
          observation: { messages, tools, metadata: { ...about, remaining: session.remaining() } },
          reward: null,
          done: false,
        },
      }),
    );
  }

  private async step(action: Extract<OpenEnvRequest, { type: 'step' }>['action']): Promise<void> {
    const session = this.session;
    if (session === undefined)
      throw new HttpProblem(409, 'NO_EPISODE', 'no episode on this connection: send reset first');
    if (action.kind === 'list_tools') {
      this.send(
        JSON.stringify({
          type: 'observation',
          data: {
            observation: { tools: session.episode!.tools.map(chatTool) },
            reward: null,
            done: session.isDone,
          },
        }),
      );
      return;
    }
    if (session.finished)
      throw new HttpProblem(409, 'EPISODE_FINISHED', 'the episode is finished: send reset for another');
    const turnId = action.turnId ?? `openenv-${randomUUID()}`;
    const message: AssistantMessage =
      action.kind === 'message'
        ? (action.message as AssistantMessage)
        : {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: `call_${turnId}`.slice(0, 128),
                type: 'function',
                function: { name: action.toolName, arguments: JSON.stringify(action.arguments) },
              },
            ],
          };
    const answer: TurnAnswer = await session.turn({ turnId, message });
    let reward: number | null = null;
    let result: ServedResult | undefined;
    if (answer.done) {
      // Collected and graded by Karotte's grader in its own sandbox: the reward is the
      // grader's verdict, never anything the student could write.
      result = await this.host.finish(session);
      // An infrastructure failure is masked for the trainer: OpenEnv's reward may be null.
      reward = result.trainable ? result.reward : null;
    }
    this.send(
      JSON.stringify({
        type: 'observation',
        data: {
          observation: {
            toolMessages: answer.toolMessages,
            nextMessages: answer.nextMessages,
            metadata: {
              episodeId: session.id,
              turnId: answer.turnId,
              turnIndex: answer.turnIndex,
              stepEnded: answer.stepEnded,
              stopReason: answer.stopReason,
              toolMessages: answer.toolMessages,
              remaining: session.remaining(),
              ...(result === undefined ? {} : { result }),
            },
          },
          reward,
          done: answer.done,
        },
      }),
    );
  }
}
