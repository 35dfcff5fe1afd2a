/* eslint-disable no-restricted-imports, no-restricted-syntax -- a test helper, like the *.test.ts files: it starts the
   topology's processes (tests are exempt from the process-owners rule), throws plain test failures and parses
   the JSON lines of processes it started itself. */
// The test topology of scale-out.md section 5, made and removed by the tests themselves: a
// redis-server in its own network namespace on a bridge (198.51.100.1, TEST-NET-2, inside
// namespaces this file makes only), worker "hosts" in namespaces of their own joined to the
// bridge by veths, and the built `karotte worker` CLI run in them with nsenter (--net only: the
// host's mounts and cgroups stay as they are, which the sandbox needs). The test process itself
// reaches Redis through its unix socket, so no address or route is added on the host. Every
// process is started here and ended by pid; every name carries `karotte`.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';

const IP = '/usr/sbin/ip';
const NSENTER = '/usr/bin/nsenter';
const REDIS_SERVER = '/usr/bin/redis-server';
export const CLI = path.resolve(import.meta.dirname, '../../../apps/karotte/dist/cli.js');
export const EXAMPLES = path.resolve(import.meta.dirname, '../../../apps/karotte/examples');
export const REDIS_ADDRESS = '198.51.100.1';
export const REDIS_PORT = 6379;
export const LEASE_DIR = '/run/karotte/sandbox/uids';

function ip(...args: string[]): void {
  execFileSync(IP, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function ipQuiet(...args: string[]): void {
  try {
    ip(...args);
  } catch {
    // already gone
  }
}

/** Wait for `check` to hold, polling, for at most `timeoutMs`; throws with `what` on timeout. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface WorkerProcess {
  readonly name: string;
  readonly netns: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly events: Record<string, unknown>[];
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first event matching. */
  waitEvent(
    match: (e: Record<string, unknown>) => boolean,
    timeoutMs: number,
  ): Promise<Record<string, unknown>>;
  /** SIGTERM (or the signal), then the exit; SIGKILL past `timeoutMs` (and it throws). */
  stop(
    signal?: NodeJS.Signals,
    timeoutMs?: number,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface RedisProcess {
  readonly pid: number;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** The whole topology. */
export class Cluster {
  readonly tag = Math.random().toString(36).slice(2, 6);
  readonly redisNs = `karotte-d${this.tag}-r`;
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-dispatch-test-'));
  readonly socket = path.join(this.dir, 'redis.sock');
  readonly tasksDir = path.join(this.dir, 'tasks');
  private readonly bridge = `kd${this.tag}br`;
  private readonly hosts: string[] = [];
  private readonly workers = new Set<WorkerProcess>();
  private redisProc: RedisProcess | undefined;

  constructor() {
    fs.mkdirSync(this.tasksDir);
    for (const name of ['quarterly-revenue', 'roman-numerals'])
      fs.symlinkSync(path.join(EXAMPLES, name), path.join(this.tasksDir, name));
  }

  /** The redis namespace and bridge, and `n` worker hosts (`karotte-d<tag>-w<i>`). */
  create(hosts: number): void {
    ip('netns', 'add', this.redisNs);
    ip('-n', this.redisNs, 'link', 'set', 'lo', 'up');
    ip('-n', this.redisNs, 'link', 'add', this.bridge, 'type', 'bridge');
    ip('-n', this.redisNs, 'addr', 'add', `${REDIS_ADDRESS}/24`, 'dev', this.bridge);
    ip('-n', this.redisNs, 'link', 'set', this.bridge, 'up');
    for (let i = 1; i <= hosts; i += 1) {
      const ns = `karotte-d${this.tag}-w${i}`;
      ip('netns', 'add', ns);
      this.hosts.push(ns);
      ip('-n', ns, 'link', 'set', 'lo', 'up');
      ip(
        'link',
        'add',
        `kd${this.tag}h${i}`,
        'netns',
        ns,
        'type',
        'veth',
        'peer',
        'name',
        this.port(i),
        'netns',
        this.redisNs,
      );
      ip('-n', this.redisNs, 'link', 'set', this.port(i), 'master', this.bridge);
      ip('-n', this.redisNs, 'link', 'set', this.port(i), 'up');
      ip('-n', ns, 'addr', 'add', `198.51.100.${10 + i}/24`, 'dev', `kd${this.tag}h${i}`);
      ip('-n', ns, 'link', 'set', `kd${this.tag}h${i}`, 'up');
    }
  }

  /** The bridge port of host `i` (in the redis namespace): down is a silent partition. */
  port(i: number): string {
    return `kd${this.tag}p${i}`;
  }

  host(i: number): string {
    const ns = this.hosts[i - 1];
    if (ns === undefined) throw new Error(`no host ${i}`);
    return ns;
  }

  /** Cut host `i` off silently: its bridge port goes down, its own link stays up. */
  partition(i: number): void {
    ip('-n', this.redisNs, 'link', 'set', this.port(i), 'down');
  }

  heal(i: number): void {
    ip('-n', this.redisNs, 'link', 'set', this.port(i), 'up');
  }

  /** Start redis-server in its namespace (AOF everysec when `aof`), listening on the bridge and the unix socket. */
  async startRedis(options: { aof?: boolean } = {}): Promise<RedisProcess> {
    const args = [
      '--net=/run/netns/' + this.redisNs,
      '--',
      REDIS_SERVER,
      '--bind',
      REDIS_ADDRESS,
      '--port',
      String(REDIS_PORT),
      '--unixsocket',
      this.socket,
      '--unixsocketperm',
      '700',
      '--dir',
      this.dir,
      '--save',
      '',
      '--appendonly',
      options.aof === true ? 'yes' : 'no',
      '--appendfsync',
      'everysec',
      '--protected-mode',
      'no',
      '--maxmemory-policy',
      'noeviction',
    ];
    const child = spawn(NSENTER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout.on('data', (c: Buffer) => (log += c.toString()));
    child.stderr.on('data', (c: Buffer) => (log += c.toString()));
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        resolve();
      }),
    );
    await until(`redis-server to answer (${log})`, () => this.ping(), 15_000);
    const proc: RedisProcess = {
      pid: child.pid!,
      stop: async (signal = 'SIGTERM') => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      },
    };
    this.redisProc = proc;
    return proc;
  }

  private async ping(): Promise<boolean> {
    if (!fs.existsSync(this.socket)) return false;
    const r = new Redis({
      path: this.socket,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    r.on('error', () => undefined);
    try {
      await r.connect();
      return (await r.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      r.disconnect();
    }
  }

  /** Stop the running redis-server (SIGKILL: a crash). */
  async redisStop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await this.redisProc?.stop(signal);
    fs.rmSync(this.socket, { force: true });
  }

  /** A Redis client of the test itself (the unix socket). */
  redis(): Redis {
    const r = new Redis({ path: this.socket, maxRetriesPerRequest: 2 });
    r.on('error', () => undefined);
    return r;
  }

  /** A BullMQ queue handle of the test itself, to read jobs (and to add poison). */
  queue(name: string): Queue {
    const q = new Queue(name, {
      connection: { path: this.socket, maxRetriesPerRequest: 2 },
      prefix: '{karotte}',
    });
    q.on('error', () => undefined);
    return q;
  }

  /** `karotte worker` in host `i`'s namespace, with JSON events on stdout. */
  startWorker(i: number, name: string, extra: readonly string[]): WorkerProcess {
    const netns = this.host(i);
    const art = path.join(this.dir, 'artifacts', name);
    const child = spawn(
      NSENTER,
      [
        `--net=/run/netns/${netns}`,
        '--',
        process.execPath,
        CLI,
        'worker',
        '--redis',
        `redis://${REDIS_ADDRESS}:${REDIS_PORT}`,
        '--tasks',
        this.tasksDir,
        '--artifacts',
        art,
        '--name',
        name,
        '--json',
        ...extra,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin' } },
    );
    const events: Record<string, unknown>[] = [];
    let out = '';
    let err = '';
    const waiters: {
      match: (e: Record<string, unknown>) => boolean;
      resolve: (e: Record<string, unknown>) => void;
    }[] = [];
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      let at;
      while ((at = out.indexOf('\n')) >= 0) {
        const line = out.slice(0, at);
        out = out.slice(at + 1);
        let e: Record<string, unknown>;
        try {
          e = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue;
        }
        events.push(e);
        for (const w of [...waiters])
          if (w.match(e)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(e);
          }
      }
    });
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => {
        resolve({ code, signal });
      }),
    );
    const w: WorkerProcess = {
      name,
      netns,
      child,
      pid: child.pid!,
      events,
      stderr: () => err,
      exited,
      waitEvent: (match, timeoutMs) => {
        const found = events.find(match);
        if (found !== undefined) return Promise.resolve(found);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => {
            reject(
              new Error(
                `worker ${name}: no matching event in ${timeoutMs} ms; events ${JSON.stringify(events).slice(-3000)}; stderr ${err.slice(-2000)}`,
              ),
            );
          }, timeoutMs);
          waiters.push({
            match,
            resolve: (e) => {
              clearTimeout(timer);
              resolve(e);
            },
          });
          void exited.then(() => {
            clearTimeout(timer);
            reject(new Error(`worker ${name} exited before the event; stderr ${err.slice(-2000)}`));
          });
        });
      },
      stop: async (signal = 'SIGTERM', timeoutMs = 60_000) => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        let killed = false;
        const timer = setTimeout(() => {
          killed = true;
          child.kill('SIGKILL');
        }, timeoutMs);
        const result = await exited;
        clearTimeout(timer);
        if (killed) throw new Error(`worker ${name} did not exit within ${timeoutMs} ms of ${signal}`);
        return result;
      },
    };
    this.workers.add(w);
    void exited.then(() => this.workers.delete(w));
    return w;
  }

  /** `karotte <args>` run in host `i`'s namespace (submit, results), bounded. */
  cli(
    i: number,
    args: readonly string[],
    timeoutMs = 120_000,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(
        NSENTER,
        [`--net=/run/netns/${this.host(i)}`, '--', process.execPath, CLI, ...args],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { PATH: '/usr/bin:/bin' },
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`karotte ${args.join(' ')} did not exit within ${timeoutMs} ms: ${stderr}`));
      }, timeoutMs);
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** What a worker process left behind: live leases it held, processes of those uids, veths of sandboxes in its host. */
  leftovers(pids: readonly number[], hosts: readonly number[]): string[] {
    const found: string[] = [];
    for (const lease of leases()) {
      if (pids.includes(lease.ownerPid))
        found.push(`lease of uid ${lease.uid} held by worker pid ${lease.ownerPid}`);
    }
    for (const i of hosts) {
      const links = execFileSync(IP, ['-n', this.host(i), '-o', 'link'], { encoding: 'utf8' });
      for (const m of links.matchAll(/\d+: (kv[hs][^:@\s]*)/g))
        found.push(`sandbox veth ${m[1]} in ${this.host(i)}`);
    }
    return found;
  }

  /** Stop every worker and Redis still running, delete the namespaces and the directory. */
  async destroy(): Promise<void> {
    for (const w of [...this.workers]) await w.stop('SIGKILL', 10_000).catch(() => undefined);
    await this.redisProc?.stop('SIGKILL').catch(() => undefined);
    for (const ns of this.hosts) ipQuiet('netns', 'delete', ns);
    ipQuiet('netns', 'delete', this.redisNs);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The sandbox leases on this host (uid, owner pid). */
export function leases(): { uid: number; ownerPid: number; sandboxId: string }[] {
  let names: string[];
  try {
    names = fs.readdirSync(LEASE_DIR);
  } catch {
    return [];
  }
  const out: { uid: number; ownerPid: number; sandboxId: string }[] = [];
  for (const name of names) {
    if (!name.endsWith('.lock')) continue;
    try {
      const record = JSON.parse(fs.readFileSync(path.join(LEASE_DIR, name), 'utf8')) as {
        ownerPid?: number;
        sandboxId?: string;
      };
      out.push({
        uid: Number(name.slice(0, -5)),
        ownerPid: record.ownerPid ?? 0,
        sandboxId: record.sandboxId ?? '',
      });
    } catch {
      // removed while read
    }
  }
  return out;
}

/** The cgroups (every controller, v1 or v2) a sandbox of `sandboxId` still has. */
export function cgroupsOf(sandboxId: string): string[] {
  const root = '/sys/fs/cgroup';
  const dirs = [root, ...fs.readdirSync(root).map((name) => path.join(root, name))];
  return dirs.map((dir) => path.join(dir, `karotte-${sandboxId}`)).filter((dir) => fs.existsSync(dir));
}

/** Pids of the processes of `uid`. */
export function pidsOfUid(uid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = fs.readFileSync(`/proc/${name}/status`, 'utf8');
      const m = /^Uid:\s+(\d+)/m.exec(status);
      if (m !== null && Number(m[1]) === uid) out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

/** A replay: `sleep <s>` as the student, then the quarterly-revenue control's messages. */
export function slowControl(seconds: number): unknown[] {
  const control = JSON.parse(
    fs.readFileSync(path.join(EXAMPLES, 'quarterly-revenue', 'control.json'), 'utf8'),
  ) as unknown[];
  const sleep = {
    role: 'assistant',
    content: null,
    tool_calls: [
      {
        id: 'sleep',
        type: 'function',
        function: { name: 'bash', arguments: JSON.stringify({ command: `sleep ${seconds}` }) },
      },
    ],
  };
  return [sleep, ...control];
}
