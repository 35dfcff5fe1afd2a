// A small Node.js client of the protocol (node:http, so a unix socket works as well as TCP):
// what a TypeScript trainer's loop calls, and what the project's own tests drive the server with.
import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { parseOptions } from '@karotte/base';
import type {
  CreateEpisodeRequest,
  CreateGroupRequest,
  RunRequestBody,
  ServedResult,
  TurnAnswer,
  TurnRequestBody,
} from './schemas.js';

/** Options of {@link createEnvironmentClient}. */
export const environmentClientOptionsSchema = z
  .object({
    /** `http://127.0.0.1:<port>`, or any base URL when `socketPath` is given (only its path is used). */
    baseUrl: z.url({ protocol: /^http$/ }).default('http://localhost'),
    /** A unix socket to connect to instead of the URL's host and port. */
    socketPath: z.string().min(1).optional(),
    token: z.string().min(1),
    /** Retries of a 503 (at capacity), each after its `Retry-After`. @default 30 */
    maxRetries: z.number().int().min(0).max(10_000).default(30),
    /** The longest `Retry-After` honoured, in milliseconds. @default 30000 */
    maxRetryDelayMs: z.number().int().min(0).max(3_600_000).default(30_000),
  })
  .strict();
export type EnvironmentClientOptions = z.input<typeof environmentClientOptionsSchema>;

/** An answer that is not 2xx: the protocol's error body and the status. */
export class EnvironmentRequestError extends Error {
  override readonly name = 'EnvironmentRequestError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field: string | undefined,
  ) {
    super(`${status} ${code}: ${message}`);
  }
}

/** What `POST /v1/episodes` answers (and each member of a group). */
export interface CreatedEpisode {
  readonly episodeId: string;
  readonly groupId: string | null;
  readonly taskId: string;
  readonly seed: number;
  readonly worldFingerprint: string;
  readonly messages: readonly Record<string, unknown>[];
  readonly tools: readonly Record<string, unknown>[];
}

/** One event of an episode's stream. */
export interface StreamedEvent {
  readonly seq: number;
  readonly time: string;
  readonly type: string;
  readonly data: Record<string, unknown>;
}

/** The client: one method per route. */
export interface EnvironmentClient {
  /** A raw request: status, headers and parsed body (no retry). */
  request(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: unknown }>;
  tasks(): Promise<{ tasks: { id: string; steps: number }[] }>;
  createEpisode(request: CreateEpisodeRequest): Promise<CreatedEpisode>;
  createGroup(
    request: CreateGroupRequest,
  ): Promise<{ groupId: string; worldFingerprint: string; episodes: CreatedEpisode[] }>;
  turn(episodeId: string, turn: TurnRequestBody): Promise<TurnAnswer>;
  storedTurn(episodeId: string, turnId: string): Promise<TurnAnswer>;
  finish(episodeId: string): Promise<ServedResult>;
  cancel(episodeId: string): Promise<void>;
  run(
    episodeId: string,
    request: RunRequestBody,
  ): Promise<{ result: ServedResult; messages: unknown[]; turns: Record<string, unknown>[] }>;
  /** The episode's events from `from` on, until the stream ends (the episode finished) or `abortSignal` fires. */
  events(
    episodeId: string,
    options?: { from?: number; abortSignal?: AbortSignal },
  ): AsyncGenerator<StreamedEvent>;
}

/** Create a client of a `karotte serve` server. */
export function createEnvironmentClient(options: EnvironmentClientOptions): EnvironmentClient {
  const o = parseOptions(environmentClientOptionsSchema, options, 'environment client options');
  const base = new URL(o.baseUrl);
  const agent = new http.Agent({ keepAlive: true });

  function target(pathname: string): http.RequestOptions {
    return o.socketPath === undefined
      ? { host: base.hostname, port: base.port === '' ? 80 : Number(base.port), path: pathname, agent }
      : { socketPath: o.socketPath, path: pathname, agent };
  }

  /**
   * One request. A kept-alive socket the server closed (its keep-alive timeout) just as this
   * request went out fails with ECONNRESET or EPIPE before any answer: the server never read it,
   * so it is sent once more on a fresh socket (Node.js's `reusedSocket` advice). A request on a
   * fresh socket, or one that got an answer, is never resent.
   */
  async function request(method: string, pathname: string, body?: unknown) {
    try {
      return await requestOnce(method, pathname, body);
    } catch (error) {
      if (!(error instanceof StaleSocketError)) throw error;
      return requestOnce(method, pathname, body, true);
    }
  }

  function requestOnce(method: string, pathname: string, body: unknown, fresh = false) {
    return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: unknown }>(
      (resolve, reject) => {
        const text = body === undefined ? undefined : JSON.stringify(body);
        let answered = false;
        const req = http.request(
          {
            ...target(pathname),
            // The resend takes a new connection: the pool may hold more sockets the server closed.
            ...(fresh ? { agent: false } : {}),
            method,
            headers: {
              authorization: `Bearer ${o.token}`,
              ...(text === undefined
                ? {}
                : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }),
            },
          },
          (res) => {
            answered = true;
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const raw = Buffer.concat(chunks).toString('utf8');
              let parsed: unknown;
              try {
                // eslint-disable-next-line no-restricted-syntax -- the server's own answer, not student data
                parsed = raw === '' ? null : (JSON.parse(raw) as unknown);
              } catch {
                parsed = raw;
              }
              resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
            });
            res.on('error', reject);
          },
        );
        req.on('error', (error: NodeJS.ErrnoException) => {
          const stale =
            !answered && req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
          reject(stale ? new StaleSocketError(error) : error);
        });
        req.end(text);
      },
    );
  }

  async function call<T>(method: string, pathname: string, body?: unknown): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      const answer = await request(method, pathname, body);
      if (answer.status === 503 && attempt < o.maxRetries) {
        const seconds = Number(answer.headers['retry-after'] ?? '1');
        await delay(Math.min(o.maxRetryDelayMs, Number.isFinite(seconds) ? seconds * 1000 : 1000));
        continue;
      }
      if (answer.status >= 200 && answer.status < 300) return answer.body as T;
      const error = (answer.body as { error?: { code?: string; message?: string; field?: string } } | null)
        ?.error;
      throw new EnvironmentRequestError(
        answer.status,
        error?.code ?? 'HTTP_ERROR',
        error?.message ?? String(answer.body),
        error?.field,
      );
    }
  }

  const episode = (id: string): string => `/v1/episodes/${encodeURIComponent(id)}`;

  async function* events(
    episodeId: string,
    options: { from?: number; abortSignal?: AbortSignal } = {},
  ): AsyncGenerator<StreamedEvent> {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request({
        ...target(`${episode(episodeId)}/events?from=${options.from ?? 0}`),
        method: 'GET',
        headers: { authorization: `Bearer ${o.token}`, accept: 'text/event-stream' },
        ...(options.abortSignal === undefined ? {} : { signal: options.abortSignal }),
      });
      req.on('response', resolve);
      req.on('error', reject);
      req.end();
    });
    if (res.statusCode !== 200) {
      res.resume();
      throw new EnvironmentRequestError(
        res.statusCode ?? 0,
        'HTTP_ERROR',
        'the event stream was refused',
        undefined,
      );
    }
    let buffer = '';
    try {
      for await (const chunk of res) {
        buffer += (chunk as Buffer).toString('utf8');
        let end;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data: '))
            .map((line) => line.slice(6))
            .join('\n');
          // A block without an id is a notice (events_dropped), a comment a keep-alive.
          const numbered = block.split('\n').some((line) => line.startsWith('id: '));
          // eslint-disable-next-line no-restricted-syntax -- the server's own event, not student data
          if (numbered && data !== '') yield JSON.parse(data) as StreamedEvent;
        }
      }
    } catch (error) {
      if (options.abortSignal?.aborted !== true) throw error;
    }
  }

  return {
    request,
    tasks: () => call('GET', '/v1/tasks'),
    createEpisode: (body) => call('POST', '/v1/episodes', body),
    createGroup: (body) => call('POST', '/v1/groups', body),
    turn: (id, body) => call('POST', `${episode(id)}/turns`, body),
    storedTurn: (id, turnId) => call('GET', `${episode(id)}/turns/${encodeURIComponent(turnId)}`),
    finish: (id) => call('POST', `${episode(id)}/finish`, {}),
    cancel: async (id) => {
      await call('DELETE', episode(id));
    },
    run: (id, body) => call('POST', `${episode(id)}/run`, body),
    events,
  };
}

/** A request lost on a kept-alive socket the server had closed: resent once (see `request`). */
class StaleSocketError extends Error {
  constructor(readonly original: NodeJS.ErrnoException) {
    super(original.message, { cause: original });
  }
}
