// The worker of the package in this process, against a real redis-server the test starts on
// loopback: the operations surface (/healthz, /readyz, Prometheus /metrics), the startup check
// and reclaim, and the client's reconciled results. Episodes are real sandboxed episodes.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { createScriptedModelServer, textReply, toolCallReply } from '@karotte/agents/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  autoConcurrency,
  createDispatchClient,
  createWorker,
  parseRedisUrl,
  type WorkerEvent,
} from './index.js';

const isRoot = process.getuid?.() === 0;
const haveRedis = fs.existsSync('/usr/bin/redis-server');
if ((!isRoot || !haveRedis) && process.env['CI'] !== 'true')
  console.log(
    `[karotte] dispatch worker tests skipped: ${!isRoot ? 'they need root (sandboxes)' : 'no /usr/bin/redis-server'}`,
  );

const EXAMPLES = path.resolve(import.meta.dirname, '../../../apps/karotte/examples');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

async function startRedis(dir: string, port: number): Promise<ReturnType<typeof spawn>> {
  const child = spawn(
    '/usr/bin/redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
    {
      stdio: 'ignore',
    },
  );
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.end();
        resolve(true);
      });
      s.once('error', () => {
        resolve(false);
      });
    });
    if (up) return child;
    if (Date.now() > deadline) throw new Error('redis-server did not listen');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// Under CI=true these tests must run: a CI machine without what they need is a broken one.
if ((!isRoot || !haveRedis) && process.env['CI'] === 'true')
  throw new Error(
    'the dispatch tests need root, redis-server, nsenter, ip and the built CLI: CI=true forbids skipping them',
  );

describe.skipIf(!isRoot || !haveRedis)(
  'createWorker (in process, real Redis on loopback)',
  { timeout: 120_000 },
  () => {
    let dir: string;
    let port: number;
    let redis: ReturnType<typeof spawn>;

    beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-dispatch-worker-'));
      fs.mkdirSync(path.join(dir, 'tasks'));
      fs.symlinkSync(path.join(EXAMPLES, 'quarterly-revenue'), path.join(dir, 'tasks', 'quarterly-revenue'));
      port = await freePort();
      redis = await startRedis(dir, port);
    }, 30_000);

    afterAll(async () => {
      if (redis.exitCode === null) {
        const exited = new Promise((r) => redis.once('exit', r));
        redis.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('passes the startup check, reclaims first, serves /healthz /readyz /metrics, counts the episode, and is not ready while it drains', async () => {
      const target = parseRedisUrl(`redis://127.0.0.1:${port}`);
      const events: WorkerEvent[] = [];
      const worker = createWorker({
        redis: target,
        queue: 'ops',
        tasksDir: path.join(dir, 'tasks'),
        artifactsDir: path.join(dir, 'artifacts'),
        name: 'ops-worker',
        metricsPort: 0,
        lockMs: 5_000,
        onEvent: (e) => events.push(e),
      });
      const client = createDispatchClient({ redis: target, queue: 'ops' });
      try {
        await worker.start();
        expect(events.map((e) => e.event).slice(0, 2)).toEqual(['reclaimed', 'ready']);
        const base = `http://127.0.0.1:${worker.healthPort()!}`;
        expect((await fetch(`${base}/healthz`)).status).toBe(200);
        expect((await fetch(`${base}/readyz`)).status).toBe(200);
        expect((await fetch(`${base}/nope`)).status).toBe(404);
        const control = JSON.parse(
          fs.readFileSync(path.join(EXAMPLES, 'quarterly-revenue', 'control.json'), 'utf8'),
        ) as never[];
        const ids = await client.submit({
          runId: 'ops',
          task: { id: 'quarterly-revenue' },
          agent: { kind: 'replay', messages: control },
        });
        const progress: number[] = [];
        const reports = await client.waitForResults('ops', {
          onProgress: (p) => progress.push(p.done),
          pollMs: 200,
        });
        expect(reports.map((r) => [r.episodeId, r.result?.status, r.accepted?.worker])).toEqual([
          [ids[0], 'passed', 'ops-worker'],
        ]);
        expect(progress.at(-1)).toBe(1);
        const metrics = await (await fetch(`${base}/metrics`)).text();
        expect(metrics).toContain('karotte_episodes_total{queue="ops",status="passed"} 1');
        expect(metrics).toContain('karotte_episodes_active 0');
        expect(metrics).toContain('karotte_worker_ready 1');
        expect(metrics).toMatch(/karotte_episode_seconds_count\{phase="attempt"\} 1/);
        expect(metrics).toContain('karotte_lock_lost_total{how="watchdog"} 0');
        const drained = worker.drain();
        expect(worker.ready()).toBe(false);
        await drained;
        await worker.closed;
        expect(events.at(-1)?.event).toBe('closed');
      } finally {
        await worker.drain();
        await client.close();
      }
    });

    it('is not ready while Redis is down, and ready again once it is back', async () => {
      const target = parseRedisUrl(`redis://127.0.0.1:${port}`);
      const worker = createWorker({
        redis: target,
        queue: 'ready',
        tasksDir: path.join(dir, 'tasks'),
        artifactsDir: path.join(dir, 'artifacts'),
        metricsPort: 0,
        startupCheck: false,
        // Reclaim is the other tests' subject; here no episode runs.
        recover: () => Promise.resolve(null),
      });
      try {
        await worker.start();
        const readyz = async (): Promise<number> =>
          (await fetch(`http://127.0.0.1:${worker.healthPort()!}/readyz`)).status;
        expect(await readyz()).toBe(200);
        const exited = new Promise((r) => redis.once('exit', r));
        redis.kill('SIGKILL');
        await exited;
        await until('/readyz 503 with Redis down', async () => (await readyz()) === 503, 10_000);
        expect((await fetch(`http://127.0.0.1:${worker.healthPort()!}/healthz`)).status).toBe(200);
        redis = await startRedis(dir, port);
        await until('/readyz 200 with Redis back', async () => (await readyz()) === 200, 20_000);
      } finally {
        await worker.drain();
      }
    });

    it('runs a model agent through an endpoint only the worker knows: the job names it, the URL and the key never reach Redis', async () => {
      const control = JSON.parse(
        fs.readFileSync(path.join(EXAMPLES, 'quarterly-revenue', 'control.json'), 'utf8'),
      ) as {
        tool_calls?: { function: { arguments: string } }[];
      }[];
      const replies = control.flatMap((m) =>
        (m.tool_calls ?? []).map((c) => toolCallReply('bash', c.function.arguments)),
      );
      const server = await createScriptedModelServer({ replies: [...replies, textReply('Done.')] });
      const key = 'sk-karotte-dispatch-test-never-in-redis';
      process.env['KAROTTE_DISPATCH_TEST_KEY'] = key;
      const target = parseRedisUrl(`redis://127.0.0.1:${port}`);
      const worker = createWorker({
        redis: target,
        queue: 'model',
        tasksDir: path.join(dir, 'tasks'),
        artifactsDir: path.join(dir, 'artifacts'),
        startupCheck: false,
        endpoints: { scripted: { baseURL: server.url, apiKeyEnv: 'KAROTTE_DISPATCH_TEST_KEY' } },
      });
      const client = createDispatchClient({ redis: target, queue: 'model' });
      try {
        await worker.start();
        const [id] = await client.submit({
          runId: 'model',
          task: { id: 'quarterly-revenue' },
          agent: { kind: 'openai', endpoint: 'scripted', model: 'scripted-model', policyVersion: 'v7' },
        });
        const [unknown] = await client.submit({
          runId: 'model-elsewhere',
          task: { id: 'quarterly-revenue' },
          agent: { kind: 'openai', endpoint: 'nowhere', model: 'scripted-model' },
        });
        const [report] = await client.waitForResults('model', { pollMs: 200 });
        expect(report?.result?.status).toBe('passed');
        expect(report?.accepted?.policyVersion).toBe('v7');
        expect(server.requests[0]?.headers['authorization']).toBe(`Bearer ${key}`);
        const [refused] = await client.waitForResults('model-elsewhere', { pollMs: 200 });
        expect((refused?.result?.['error'] as { code: string }).code).toBe('ENDPOINT_UNKNOWN');
        for (const jobId of [id!, unknown!]) {
          const job = await client.queue.getJob(jobId);
          const stored = JSON.stringify([job!.data, job!.returnvalue, job!.failedReason]);
          expect(stored).not.toContain(key);
          expect(stored).not.toContain(server.url);
        }
      } finally {
        await worker.drain();
        await client.close();
        await server.close();
        Reflect.deleteProperty(process.env, 'KAROTTE_DISPATCH_TEST_KEY');
      }
    });

    it('stops by itself: once the queue has been empty for idleMs (a Kubernetes Job), or after maxEpisodes, leaving the rest queued', async () => {
      const target = parseRedisUrl(`redis://127.0.0.1:${port}`);
      const base = {
        redis: target,
        tasksDir: path.join(dir, 'tasks'),
        artifactsDir: path.join(dir, 'artifacts'),
        startupCheck: false,
        recover: () => Promise.resolve(null),
      };
      const idle = createWorker({ ...base, queue: 'idle', idleMs: 300 });
      await idle.start();
      const started = Date.now();
      await idle.closed;
      expect(Date.now() - started).toBeLessThan(10_000);

      const client = createDispatchClient({ redis: target, queue: 'capped' });
      const control = JSON.parse(
        fs.readFileSync(path.join(EXAMPLES, 'quarterly-revenue', 'control.json'), 'utf8'),
      ) as never[];
      try {
        await client.submit({
          runId: 'capped',
          task: { id: 'quarterly-revenue' },
          agent: { kind: 'replay', messages: control },
          n: 2,
        });
        const capped = createWorker({ ...base, queue: 'capped', maxEpisodes: 1 });
        await capped.start();
        await capped.closed;
        const reports = await client.results('capped');
        expect(reports.map((r) => r.state).sort()).toEqual(['completed', 'waiting']);
      } finally {
        await client.close();
      }
    });

    it('--concurrency auto: at least 1, at most four per CPU, bounded by memory', () => {
      const n = autoConcurrency();
      expect(n).toBeGreaterThanOrEqual(1);
      expect(n).toBeLessThanOrEqual(os.availableParallelism() * 4);
      expect(autoConcurrency(os.totalmem())).toBe(1);
    });
  },
);
