// The HTTP plumbing every route shares: bearer-token check in constant time, a size-capped
// body read, strict JSON, zod validation to a 400 naming the field, JSON answers.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { parseJsonStrict } from '@karotte/base';

/** An answer that is not 2xx: `{"error": {"code", "message", "field"?}}` with its status. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

const JSON_LIMITS = { maxDepth: 64, maxStringLength: 16 * 1024 * 1024 };

/**
 * True when the request carries `Authorization: Bearer <token>`. Both sides are hashed first,
 * so the comparison is of equal lengths and takes the same time whatever the guess.
 */
export function authorized(req: IncomingMessage, tokenDigest: Buffer): boolean {
  const header = req.headers.authorization;
  if (typeof header !== 'string' || !header.startsWith('Bearer ')) return false;
  const given = createHash('sha256').update(header.slice('Bearer '.length), 'utf8').digest();
  return timingSafeEqual(given, tokenDigest);
}

/** The digest {@link authorized} compares against. */
export function digestToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Read the body, refusing past `maxBytes` (413) without buffering the rest. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? '0');
    if (Number.isFinite(declared) && declared > maxBytes) {
      reject(new HttpProblem(413, 'BODY_TOO_LARGE', `the body is larger than ${maxBytes} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    req.on('data', (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > maxBytes) {
        refused = true;
        chunks.length = 0;
        reject(new HttpProblem(413, 'BODY_TOO_LARGE', `the body is larger than ${maxBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!refused) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', (error) => {
      if (!refused) reject(new HttpProblem(400, 'BODY_UNREADABLE', error.message));
    });
  });
}

/** Parse `text` as strict JSON and validate it: a 400 naming the first offending field. */
export function parseBody<S extends z.ZodType>(schema: S, text: string): z.output<S> {
  const source = text.trim() === '' ? '{}' : text;
  const parsed = parseJsonStrict(source, JSON_LIMITS);
  if (!parsed.ok) throw new HttpProblem(400, 'INVALID_JSON', `the body is not valid JSON: ${parsed.reason}`);
  const result = schema.safeParse(parsed.value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  let field = issue.path.map(String).join('.');
  let message = issue.message;
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    field = field === '' ? key : `${field}.${key}`;
    message = `unknown field ${field}`;
  }
  return throwProblem(
    400,
    'INVALID_REQUEST',
    `${field === '' ? '(body)' : field}: ${message}`,
    field === '' ? undefined : field,
  );
}

function throwProblem(status: number, code: string, message: string, field?: string): never {
  throw new HttpProblem(status, code, message, field);
}

/** Send `body` as JSON with `status`. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

/** Send a {@link HttpProblem} as the protocol's error body. */
export function sendProblem(res: ServerResponse, problem: HttpProblem): void {
  sendJson(
    res,
    problem.status,
    {
      error: {
        code: problem.code,
        message: problem.message,
        ...(problem.field === undefined ? {} : { field: problem.field }),
      },
    },
    problem.headers,
  );
}
