import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { BadArgumentError } from '@karotte/base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOSTILE_TEXT, makeTempDir, writeRun } from '../fixtures.test-support.js';
import type { RunDetail, RunList } from '../runs/model.js';
import { createViewerServer, type ViewerServer } from './server.js';

interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** A raw request: the path is sent as written (no URL normalisation), the Host header as given. */
function request(
  url: URL,
  rawPath: string,
  options: { host?: string | null; method?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers };
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: rawPath,
        method: options.method ?? 'GET',
        headers,
        setHost: options.host !== null && options.host === undefined,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          });
        });
        res.on('error', reject);
      },
    );
    if (options.host !== undefined && options.host !== null) req.setHeader('host', options.host);
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new TypeError('request timed out')));
    req.end();
  });
}

let root: string;
let outside: string;
let server: ViewerServer;
let base: URL;
let list: RunList;

beforeAll(async () => {
  root = await makeTempDir('server');
  outside = await makeTempDir('server-outside');
  await writeRun(path.join(root, 'control'));
  await writeRun(path.join(root, 'hostile'), { status: 'failed', stdout: HOSTILE_TEXT });
  await fs.writeFile(path.join(outside, 'secret.txt'), 'KAROTTE-SECRET-OUTSIDE');
  await writeRun(path.join(outside, 'run'), { taskId: 'outside-task' });
  await fs.symlink(outside, path.join(root, 'escape'));
  await fs.symlink(path.join(outside, 'secret.txt'), path.join(root, 'control', 'secret-link'));
  server = await createViewerServer({ dirs: [root] });
  base = new URL(await server.listen());
  list = JSON.parse((await request(base, '/api/runs')).body) as RunList;
});

afterAll(async () => {
  await server.close();
  await fs.rm(root, { recursive: true, force: true });
  await fs.rm(outside, { recursive: true, force: true });
});

describe('createViewerServer', () => {
  it('listens on loopback and serves the page with a strict Content-Security-Policy', async () => {
    expect(base.hostname).toBe('127.0.0.1');
    const page = await request(base, '/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('<script src="/app.js"></script>');
    expect(page.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'none'; font-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    // The same headers on every answer: JSON, a 404, a refusal.
    for (const reply of [
      await request(base, '/api/runs'),
      await request(base, '/nothing'),
      await request(base, '/api/runs', { host: 'evil.example' }),
    ]) {
      expect(reply.headers['content-security-policy']).toBe(page.headers['content-security-policy']);
      expect(reply.headers['x-content-type-options']).toBe('nosniff');
      expect(reply.headers['cache-control']).toBe('no-store');
    }
    const css = await request(base, '/app.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
  });

  it('serves the runs it was given as JSON, by opaque id, with paged events', async () => {
    expect(list.runs.map((r) => r.name)).toEqual(['control', 'hostile']);
    const hostile = list.runs[1]!;
    const detail = JSON.parse((await request(base, `/api/runs/${hostile.id}`)).body) as RunDetail;
    expect(detail).toMatchObject({ eventCount: 10, ended: true, summary: { status: 'failed' } });
    const page = await request(base, `/api/runs/${hostile.id}/events?offset=6&limit=1`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('application/json; charset=utf-8');
    const events = JSON.parse(page.body) as {
      offset: number;
      total: number;
      events: { result: { stdout: string } }[];
    };
    expect(events).toMatchObject({ offset: 6, total: 10 });
    expect(events.events).toHaveLength(1);
    expect(events.events[0]!.result.stdout).toBe(HOSTILE_TEXT);
    expect((await request(base, `/api/runs/${hostile.id}/events?offset=-1`)).status).toBe(400);
    expect((await request(base, `/api/runs/${hostile.id}/events?limit=abc`)).status).toBe(400);
    expect((await request(base, '/api/runs/0123456789abcdef')).status).toBe(404);
  });

  it('does not descend a symbolic link out of the given directory', () => {
    expect(list.runs.map((r) => r.taskId)).not.toContain('outside-task');
  });

  it.each([
    '/../../../../etc/passwd',
    '/..%2f..%2f..%2fetc%2fpasswd',
    '/%2e%2e/%2e%2e/etc/passwd',
    '/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd',
    '/api/runs/../../../etc/passwd',
    '/api/runs/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    '//etc/passwd',
    '/control/result.json',
    '/control/secret-link',
    '/escape/secret.txt',
    '/escape/run/result.json',
    '/app.js/../../../etc/passwd',
    '/api/runs/..',
    '/api/runs/%2e%2e',
    '/?/../../etc/passwd',
    'http://evil.example/etc/passwd',
  ])('refuses %s: no file outside its routes is served', async (rawPath) => {
    const reply = await request(base, rawPath);
    expect(
      reply.status === 404 || reply.status === 400 || reply.body.includes('<script src="/app.js">'),
    ).toBe(true);
    expect(reply.body).not.toContain('root:');
    expect(reply.body).not.toContain('KAROTTE-SECRET-OUTSIDE');
    expect(reply.body).not.toContain('outside-task');
    expect(reply.body).not.toContain('"taskId"');
  });

  it('answers only to its own loopback address: another Host (DNS rebinding) is refused', async () => {
    for (const host of [
      'evil.example',
      `evil.example:${base.port}`,
      `127.0.0.1:${Number(base.port) + 1}`,
      '127.0.0.1',
      `0.0.0.0:${base.port}`,
    ]) {
      const reply = await request(base, '/api/runs', { host });
      expect(reply.status, host).toBe(421);
      expect(reply.body).not.toContain('"runs"');
    }
    // No Host at all: Node's HTTP server itself refuses an HTTP/1.1 request without one (400).
    const noHost = await request(base, '/api/runs', { host: null });
    expect(noHost.status).toBe(400);
    expect(noHost.body).not.toContain('"runs"');
    expect((await request(base, '/api/runs', { host: `localhost:${base.port}` })).status).toBe(200);
    expect((await request(base, '/api/runs', { host: `127.0.0.1:${base.port}` })).status).toBe(200);
  });

  it('refuses requests a browser marks cross-site, and every method but GET and HEAD', async () => {
    const cross = await request(base, '/api/runs', { headers: { 'sec-fetch-site': 'cross-site' } });
    expect(cross.status).toBe(403);
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']) {
      const reply = await request(base, '/api/runs', { method });
      expect(reply.status, method).toBe(405);
      expect(reply.headers['allow']).toBe('GET, HEAD');
    }
    const head = await request(base, '/api/runs', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
  });

  it('refuses a non-loopback address and misspelled options, naming the field', async () => {
    for (const host of ['0.0.0.0', '192.168.1.2', '::', 'example.com', '128.0.0.1']) {
      const error = await createViewerServer({ dirs: [root], host }).catch((e: unknown) => e);
      expect(BadArgumentError.isInstance(error), host).toBe(true);
      expect(error).toMatchObject({ field: 'host' });
    }
    const misspelled = await createViewerServer({ dirs: [root], Port: 1 } as never).catch((e: unknown) => e);
    expect(misspelled).toMatchObject({ field: 'Port' });
  });

  it('refuses a second listen() and closes cleanly', async () => {
    const other = await createViewerServer({ dirs: [root] });
    const url = new URL(await other.listen());
    await expect(other.listen()).rejects.toMatchObject({ code: 'SERVER_STATE' });
    await other.close();
    await expect(request(url, '/')).rejects.toThrow();
    await other.close();
  });
});
