// The client against a real HTTP server on loopback that plays the keep-alive race on purpose:
// it answers a request and keeps the connection, then drops that connection the moment the
// next request arrives on it (what a server whose keep-alive timeout fires just as the client
// reuses the socket does). No `karotte serve` here: only the client's own behaviour.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEnvironmentClient } from './client.js';

const servers: http.Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

interface Racing {
  baseUrl: string;
  /** Requests the handler answered, by method and path. */
  readonly answered: string[];
  /** Connections dropped as a second request arrived on them. */
  dropped: number;
  /** Connections the server accepted. */
  connections: number;
}

/** A server that drops a connection when its second request arrives (`dropSecond`), or never. */
async function racingServer(dropSecond: boolean): Promise<Racing> {
  const state: Racing = { baseUrl: '', answered: [], dropped: 0, connections: 0 };
  const served = new WeakMap<Socket, number>();
  const server = http.createServer((req, res) => {
    const socket = req.socket;
    const count = (served.get(socket) ?? 0) + 1;
    served.set(socket, count);
    if (dropSecond && count === 2) {
      state.dropped += 1;
      socket.destroy(); // unread, unanswered: the race's server side
      return;
    }
    req.resume();
    req.on('end', () => {
      state.answered.push(`${req.method ?? ''} ${req.url ?? ''}`);
      res.writeHead(200, { 'content-type': 'application/json', connection: 'keep-alive' });
      res.end(JSON.stringify({ tasks: [{ id: 't', steps: 1 }] }));
    });
  });
  server.on('connection', () => {
    state.connections += 1;
  });
  server.keepAliveTimeout = 60_000;
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

describe('createEnvironmentClient', () => {
  it('resends once, on a new connection, a request lost on a kept-alive socket the server closed', async () => {
    const racing = await racingServer(true);
    const client = createEnvironmentClient({ baseUrl: racing.baseUrl, token: 'x' });
    await expect(client.tasks()).resolves.toEqual({ tasks: [{ id: 't', steps: 1 }] });
    // The second request goes out on the kept-alive socket, which the server drops unread.
    await expect(client.tasks()).resolves.toEqual({ tasks: [{ id: 't', steps: 1 }] });
    expect(racing.dropped).toBe(1);
    expect(racing.connections).toBe(2);
    // Each request was answered exactly once: the dropped one was never read.
    expect(racing.answered).toEqual(['GET /v1/tasks', 'GET /v1/tasks']);
  });

  it('never resends a request whose fresh connection failed', async () => {
    const racing = await racingServer(false);
    const client = createEnvironmentClient({ baseUrl: racing.baseUrl, token: 'x' });
    for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
    await expect(client.tasks()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(racing.connections).toBe(0);
  });
});
