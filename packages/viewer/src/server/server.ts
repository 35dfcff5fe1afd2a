import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseOptions } from '@karotte/base';
import { z } from 'zod';
import { loadClientBundle, PAGE_STYLES } from '../assets.js';
import { ViewerError } from '../errors.js';
import { createRunCatalog, runCatalogOptionsSchema } from '../runs/reader.js';
import { SERVED_CSP, servedPageHtml } from './page.js';

/** True for a loopback host the viewer may listen on: 127.0.0.0/8, ::1 or `localhost`. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.test(host);
}

/** Options of {@link createViewerServer}: the catalog's, and where to listen (loopback only). */
export const viewerServerOptionsSchema = runCatalogOptionsSchema
  .extend({
    /**
     * The loopback address to listen on (127.0.0.0/8, ::1 or localhost); anything else is refused.
     * @default '127.0.0.1'
     */
    host: z
      .string()
      .refine(isLoopbackHost, 'must be a loopback address (127.0.0.1, ::1, localhost)')
      .default('127.0.0.1'),
    /**
     * The port; 0 picks a free one.
     * @default 0
     */
    port: z.number().int().min(0).max(65_535).default(0),
  })
  .strict();

export type ViewerServerOptions = z.input<typeof viewerServerOptionsSchema>;

/** A running viewer. */
export interface ViewerServer {
  /** Start listening; resolves with the page's URL (`http://127.0.0.1:<port>/`). */
  listen(): Promise<string>;
  /** Stop listening and close every connection. */
  close(): Promise<void>;
}

/** A response, before it is written: the routing is a function of the request alone. */
interface Answer {
  readonly status: number;
  readonly type: string;
  readonly body: string;
  readonly headers?: Readonly<Record<string, string>>;
}

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': SERVED_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

const RUN_PATH = /^\/api\/runs\/([0-9a-f]{16})$/;
const EVENTS_PATH = /^\/api\/runs\/([0-9a-f]{16})\/events$/;
const MAX_EVENTS_PER_PAGE = 1000;
const DEFAULT_EVENTS_PER_PAGE = 200;

function plain(status: number, body: string): Answer {
  return { status, type: 'text/plain; charset=utf-8', body: `${body}\n` };
}

function json(value: unknown): Answer {
  return { status: 200, type: 'application/json; charset=utf-8', body: JSON.stringify(value) };
}

function pageInteger(value: string | null, fallback: number, max: number): number | null {
  if (value === null) return fallback;
  if (!/^\d{1,9}$/.test(value)) return null;
  return Math.min(Number(value), max);
}

/**
 * Serve the page, its script, its style sheet and the JSON of the runs under `dirs`, and
 * nothing else, on loopback only.
 *
 * What a request can name is a fixed route or a run's opaque id from the catalog: no part of a
 * URL is ever joined to a path, so `..`, `%2e%2e` and the like match no route (404). A request
 * whose `Host` header is not this server's loopback address and port is refused (421), which
 * defeats DNS rebinding (a page of another site whose name was made to resolve to 127.0.0.1
 * sends its own name as `Host`); a request a browser marks `Sec-Fetch-Site: cross-site` is
 * refused too (403). Only GET and HEAD are answered.
 *
 * @throws BadArgumentError on invalid options (a non-loopback `host` among them, naming the field).
 */
export async function createViewerServer(options: ViewerServerOptions): Promise<ViewerServer> {
  const parsed = parseOptions(viewerServerOptionsSchema, options, 'viewer server options');
  const { host, port, ...catalogOptions } = parsed;
  const catalog = await createRunCatalog(catalogOptions);
  let bundle: Promise<string> | undefined;
  let allowedHosts = new Set<string>();
  let state: 'new' | 'listening' | 'closed' = 'new';
  const page = servedPageHtml();

  const route = async (method: string, url: string, headers: http.IncomingHttpHeaders): Promise<Answer> => {
    if (method !== 'GET' && method !== 'HEAD')
      return { ...plain(405, 'only GET and HEAD'), headers: { allow: 'GET, HEAD' } };
    if (headers.host === undefined || !allowedHosts.has(headers.host.toLowerCase()))
      return plain(421, 'this server answers only to its own loopback address');
    if (headers['sec-fetch-site'] === 'cross-site') return plain(403, 'cross-site requests are refused');
    const query = url.indexOf('?');
    const pathname = query < 0 ? url : url.slice(0, query);
    const params = new URLSearchParams(query < 0 ? '' : url.slice(query + 1));
    if (pathname === '/') return { status: 200, type: 'text/html; charset=utf-8', body: page };
    if (pathname === '/app.css') return { status: 200, type: 'text/css; charset=utf-8', body: PAGE_STYLES };
    if (pathname === '/app.js') {
      bundle ??= loadClientBundle();
      return { status: 200, type: 'text/javascript; charset=utf-8', body: await bundle };
    }
    if (pathname === '/api/runs') return json(await catalog.list());
    const run = RUN_PATH.exec(pathname);
    if (run !== null) {
      const detail = await catalog.detail(run[1]!);
      return detail === null ? plain(404, 'no such run') : json(detail);
    }
    const events = EVENTS_PATH.exec(pathname);
    if (events !== null) {
      const offset = pageInteger(params.get('offset'), 0, Number.MAX_SAFE_INTEGER);
      const limit = pageInteger(params.get('limit'), DEFAULT_EVENTS_PER_PAGE, MAX_EVENTS_PER_PAGE);
      if (offset === null || limit === null) return plain(400, 'offset and limit are integers');
      const found = await catalog.events(events[1]!, offset, limit);
      return found === null ? plain(404, 'no such run') : json(found);
    }
    return plain(404, 'not found');
  };

  const server = http.createServer((request, response) => {
    route(request.method ?? '', request.url ?? '', request.headers)
      .catch((error: unknown): Answer => {
        // A fault of the viewer itself: said once on the server's stderr, never sent to the page.
        process.stderr.write(`karotte view: ${error instanceof Error ? error.message : String(error)}\n`);
        return plain(500, 'the viewer failed to answer this request');
      })
      .then((answer) => {
        response.writeHead(answer.status, {
          ...SECURITY_HEADERS,
          ...answer.headers,
          'content-type': answer.type,
          'content-length': Buffer.byteLength(answer.body),
        });
        response.end(request.method === 'HEAD' ? undefined : answer.body);
      })
      .catch(() => response.destroy());
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;

  return {
    async listen() {
      if (state !== 'new') throw new ViewerError('SERVER_STATE', `listen() on a server that is ${state}`);
      state = 'listening';
      await new Promise<void>((resolve, reject) => {
        const onError = (error: Error): void => {
          reject(
            new ViewerError('LISTEN_FAILED', `cannot listen on ${host}:${port}: ${error.message}`, {
              cause: error,
            }),
          );
        };
        server.once('error', onError);
        server.listen({ host, port }, () => {
          server.off('error', onError);
          resolve();
        });
      });
      const address = server.address() as AddressInfo;
      const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      allowedHosts = new Set([`${shown}:${address.port}`, `localhost:${address.port}`]);
      return `http://${shown}:${address.port}/`;
    },
    async close() {
      if (state === 'closed') return;
      const wasListening = state === 'listening';
      state = 'closed';
      if (!wasListening) return;
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      });
    },
  };
}
