// Shared by the OpenEnv and MCP integration tests: a real environment server (real sandboxes,
// real graders) in the test's process on a free loopback port, the app's example tasks copied
// into a fresh `karotte-` directory, and what a finished episode may have left on the host.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { pidsOfUid } from '../../../test/support/index.js';
import { createEnvironmentClient } from '../src/client.js';
import { createEnvironmentServer, type EnvironmentServer } from '../src/server.js';

export const examples = path.resolve(import.meta.dirname, '../../../apps/karotte/examples');

export interface TestServer {
  readonly server: EnvironmentServer;
  readonly address: string;
  readonly token: string;
  readonly dir: string;
  /** Close the server (every live episode torn down) and remove the directory. */
  stop(): Promise<void>;
}

/** A server of the examples `quarterly-revenue` and `roman-numerals` (or `taskIds`). */
export async function startTestServer(
  options: {
    maxEpisodes?: number;
    idleTimeoutMs?: number;
    reconnectGraceMs?: number;
    maxBodyBytes?: number;
    maxConnections?: number;
    warmPool?: number;
    taskIds?: readonly string[];
    /** Listen on a unix socket (made in the test's directory) instead of loopback TCP. */
    socket?: boolean;
  } = {},
): Promise<TestServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-protocols-test-'));
  try {
    const tasks = path.join(dir, 'tasks');
    for (const id of options.taskIds ?? ['quarterly-revenue', 'roman-numerals'])
      fs.cpSync(path.join(examples, id), path.join(tasks, id), { recursive: true });
    const token = `karotte-test-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    const server = await createEnvironmentServer({
      tasksDir: tasks,
      token,
      maxEpisodes: options.maxEpisodes ?? 4,
      ...(options.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: options.idleTimeoutMs }),
      ...(options.reconnectGraceMs === undefined ? {} : { reconnectGraceMs: options.reconnectGraceMs }),
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
      ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }),
      ...(options.warmPool === undefined ? {} : { warmPool: options.warmPool }),
      // The examples' answer keys, where the app keeps them, stay out of every student's reach.
      hiddenPaths: [examples, dir],
    });
    const address = await server.listen(
      options.socket === true ? { socket: path.join(dir, 'serve.sock') } : { host: '127.0.0.1', port: 0 },
    );
    return {
      server,
      address,
      token,
      dir,
      async stop() {
        try {
          await server.close();
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

export { bashMessage, replayOf } from '../../../test/support/index.js';

const LEASES = '/run/karotte/sandbox/uids';
const CGROUP_CONTROLLERS = ['memory', 'pids', 'freezer', 'cpu,cpuacct', 'unified'];

/** The sandbox id holding `uid`'s lease now (read while the episode lives). */
export function sandboxIdOfUid(uid: number): string | undefined {
  try {
    // eslint-disable-next-line no-restricted-syntax -- trusted input: a lease file root wrote
    const record = JSON.parse(fs.readFileSync(path.join(LEASES, `${uid}.lock`), 'utf8')) as {
      sandboxId?: string;
    };
    return record.sandboxId;
  } catch {
    return undefined;
  }
}

/** The uids whose sandbox lease the process `ownerPid` holds now (a test file's own, under the forks pool). */
export function leasedUidsOf(ownerPid: number): number[] {
  let names: string[];
  try {
    names = fs.readdirSync(LEASES);
  } catch {
    return [];
  }
  const uids: number[] = [];
  for (const name of names) {
    const match = /^(\d+)\.lock$/.exec(name);
    if (match === null) continue;
    try {
      // eslint-disable-next-line no-restricted-syntax -- trusted input: a lease file root wrote
      const record = JSON.parse(fs.readFileSync(path.join(LEASES, name), 'utf8')) as { ownerPid?: number };
      if (record.ownerPid === ownerPid) uids.push(Number(match[1]));
    } catch {
      // released meanwhile
    }
  }
  return uids.sort((a, b) => a - b);
}

/**
 * What an episode of `uid` (its sandbox `sandboxId`) left: processes of the uid, its lease,
 * the sandbox's cgroups (`karotte-<sandbox id>`) and mounts, the graders' cgroups of this
 * process (`karotte-<pid>-…`).
 */
export function leftovers(uid: number, sandboxId: string | undefined): string[] {
  const found: string[] = [];
  if (pidsOfUid(uid).length > 0) found.push(`processes of uid ${uid}`);
  if (fs.existsSync(path.join(LEASES, `${uid}.lock`))) found.push(`the lease of uid ${uid}`);
  const tags = [`karotte-${process.pid}-`, ...(sandboxId === undefined ? [] : [`karotte-${sandboxId}`])];
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  for (const tag of tags.slice(1)) if (mounts.includes(tag)) found.push(`a mount named ${tag}`);
  for (const controller of CGROUP_CONTROLLERS) {
    let names: string[];
    try {
      names = fs.readdirSync(path.join('/sys/fs/cgroup', controller));
    } catch {
      continue;
    }
    for (const name of names)
      if (tags.some((tag) => name.startsWith(tag))) found.push(`cgroup ${controller}/${name}`);
  }
  return found;
}

/** Wait until `check()` holds, polling; false when `timeoutMs` passed first. */
export async function eventually(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

export type Frame = { type: string; data: Record<string, unknown> };

/**
 * A client of OpenEnv's WebSocket protocol written from OpenEnv's own client
 * (meta-pytorch/OpenEnv src/openenv/core/env_client.py): the base URL's `http://` becomes
 * `ws://` and `/ws` is appended; each call sends one `{"type", "data"}` frame and reads the
 * next frame as its answer; `disconnect()` sends `{"type": "close"}` and closes the socket.
 */
export class OpenEnvTestClient {
  private readonly inbox: Frame[] = [];
  private readonly waiting: ((frame: Frame) => void)[] = [];
  closeCode: number | undefined;
  readonly closed: Promise<number>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      // eslint-disable-next-line no-restricted-syntax -- trusted input: the frames of the server under test
      const frame = JSON.parse(Buffer.from(data as Buffer).toString('utf8')) as Frame;
      const next = this.waiting.shift();
      if (next === undefined) this.inbox.push(frame);
      else next(frame);
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code) => {
        this.closeCode = code;
        resolve(code);
      }),
    );
  }

  static wsUrl(baseUrl: string): string {
    return `${baseUrl.replace(/\/+$/, '').replace(/^http:\/\//, 'ws://')}/ws`;
  }

  /** Connect to `<baseUrl>/ws`; rejects with the HTTP status when the upgrade is refused. */
  static connect(baseUrl: string, headers: Record<string, string> = {}): Promise<OpenEnvTestClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(OpenEnvTestClient.wsUrl(baseUrl), { headers, maxPayload: 100 * 1024 * 1024 });
      ws.once('open', () => {
        resolve(new OpenEnvTestClient(ws));
      });
      ws.once('unexpected-response', (_req, res) => {
        // eslint-disable-next-line no-restricted-syntax -- a test's rejection carries the status, no code
        const refused = new Error(`upgrade refused: ${String(res.statusCode)}`);
        reject(Object.assign(refused, { status: res.statusCode }));
        ws.terminate();
      });
      ws.once('error', reject);
    });
  }

  /** The next frame the server sends (bounded: OpenEnv's message_timeout_s is 60 s). */
  next(timeoutMs = 120_000): Promise<Frame> {
    const queued = this.inbox.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        // eslint-disable-next-line no-restricted-syntax -- a test's timeout
        reject(new Error('no frame in time'));
      }, timeoutMs);
      this.waiting.push((frame) => {
        clearTimeout(timer);
        resolve(frame);
      });
    });
  }

  sendRaw(text: string | Buffer): void {
    this.ws.send(text);
  }

  /** Send one frame and read the answer, as OpenEnv's `_send_and_receive` does (errors returned, not thrown). */
  async call(type: string, data?: unknown): Promise<Frame> {
    this.ws.send(JSON.stringify(data === undefined ? { type } : { type, data }));
    return this.next();
  }

  reset(data: Record<string, unknown> = {}): Promise<Frame> {
    return this.call('reset', data);
  }

  step(action: Record<string, unknown>): Promise<Frame> {
    return this.call('step', action);
  }

  state(): Promise<Frame> {
    return this.call('state');
  }

  /** OpenEnv's disconnect(): a close frame of the protocol, then the socket's close. */
  async disconnect(): Promise<number> {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: 'close' }));
    return this.closed;
  }
}

/** The uid an episode's sandbox got, from its HTTP event stream (`sandbox_ready`). */
export async function sandboxUidOf(
  t: Pick<TestServer, 'address' | 'token'>,
  episodeId: string,
): Promise<number> {
  const client = createEnvironmentClient({ baseUrl: `http://${t.address}`, token: t.token });
  const controller = new AbortController();
  for await (const event of client.events(episodeId, { abortSignal: controller.signal })) {
    if (event.type === 'sandbox_ready') {
      controller.abort();
      return event.data['uid'] as number;
    }
  }
  throw new Error('no sandbox_ready event');
}
