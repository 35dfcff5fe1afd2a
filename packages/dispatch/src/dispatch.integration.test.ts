// T1–T7 and T9 of scale-out.md section 5 with real processes: redis-server in a network
// namespace of its own, `karotte worker` processes (the built CLI) in worker namespaces joined by
// a bridge, real sandboxed episodes of the quarterly-revenue example. Every test asserts over
// Redis itself (job state, the stored return value, stall and attempt counters) and over what
// the workers logged: each episode has exactly one accepted result, never one of an attempt
// that died or was fenced, and nothing is left on any host.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJobResult } from './index.js';
import {
  Cluster,
  cgroupsOf,
  EXAMPLES,
  leases,
  pidsOfUid,
  slowControl,
  until,
  type WorkerProcess,
} from '../test/cluster.js';

const isRoot = process.getuid?.() === 0;
const haveBinaries = ['/usr/bin/redis-server', '/usr/bin/nsenter', '/usr/sbin/ip'].every((f) =>
  fs.existsSync(f),
);
const cliBuilt = fs.existsSync(path.resolve(import.meta.dirname, '../../../apps/karotte/dist/cli.js'));
const skip = !isRoot || !haveBinaries || !cliBuilt;
if (skip && process.env['CI'] !== 'true')
  console.log(
    `[karotte] dispatch integration tests skipped: ${!isRoot ? 'they need root (namespaces, sandboxes)' : !haveBinaries ? 'redis-server, nsenter or ip missing' : 'apps/karotte is not built'}`,
  );

/** Short timings: lock 3 s, stalled check every 1 s (the defaults are 30 s each). */
const LOCK_MS = 3_000;
const TIMINGS = [
  '--lock-ms',
  String(LOCK_MS),
  '--stalled-ms',
  '1000',
  '--max-stalled',
  '2',
  '--no-startup-check',
];
const REDIS_URL = 'redis://198.51.100.1:6379';

let cluster: Cluster;

function writeReplay(name: string, messages: unknown[]): string {
  const file = path.join(cluster.dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(messages));
  return file;
}

async function submit(
  queue: string,
  run: string,
  replay: string,
  n: number,
  extra: string[] = [],
): Promise<string[]> {
  const out = await cluster.cli(3, [
    'submit',
    '--redis',
    REDIS_URL,
    '--queue',
    queue,
    '--run',
    run,
    '--task',
    path.join(cluster.tasksDir, 'quarterly-revenue'),
    '--agent',
    'replay',
    '--replay',
    replay,
    '--n',
    String(n),
    '--json',
    ...extra,
  ]);
  expect(out.stderr).toBe('');
  expect(out.code).toBe(0);
  return JSON.parse(out.stdout) as string[];
}

async function waitResults(
  queue: string,
  run: string,
  timeoutMs = 90_000,
): Promise<{ episodeId: string; result: Record<string, unknown> | null }[]> {
  const out = await cluster.cli(
    3,
    [
      'results',
      '--redis',
      REDIS_URL,
      '--queue',
      queue,
      '--run',
      run,
      '--wait',
      '--json',
      '--timeout-ms',
      String(timeoutMs),
    ],
    timeoutMs + 20_000,
  );
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout) as { episodeId: string; result: Record<string, unknown> | null }[];
}

type Attempt = { token: string; started: number };

function attemptsOf(w: WorkerProcess, jobId: string): Attempt[] {
  return w.events
    .filter((e) => e['event'] === 'started' && e['jobId'] === jobId)
    .map((e) => ({ token: String(e['token']), started: Number(e['attemptsStarted']) }));
}

function completionsOf(workers: readonly WorkerProcess[], jobId: string): number {
  return workers.flatMap((w) => w.events).filter((e) => e['event'] === 'completed' && e['jobId'] === jobId)
    .length;
}

/**
 * The invariants of every test: each episode is completed in Redis with one stored return
 * value whose result is the one `karotte results` printed, made by an attempt that is not in
 * `dead` (killed or fenced), and logged as completed by exactly `completions` workers.
 */
async function expectOneAcceptedResult(
  q: Queue,
  ids: readonly string[],
  printed: readonly { episodeId: string; result: Record<string, unknown> | null }[],
  dead: readonly Attempt[],
  workers: readonly WorkerProcess[],
): Promise<void> {
  expect(printed.map((p) => p.episodeId).sort()).toEqual([...ids].sort());
  for (const id of ids) {
    const job = await q.getJob(id);
    expect(job, id).toBeDefined();
    expect(await job!.getState(), id).toBe('completed');
    const stored = parseJobResult(job!.returnvalue);
    expect(stored, `${id} has a return value of this package`).not.toBeNull();
    expect(printed.find((p) => p.episodeId === id)?.result).toEqual(stored!.result);
    expect(
      dead.some((a) => a.token === stored!.attemptToken && a.started === stored!.attemptsStarted),
      `${id}'s accepted result comes from a dead attempt`,
    ).toBe(false);
    expect(completionsOf(workers, id), `${id} completed once`).toBe(1);
  }
}

async function expectNoLeftovers(pids: readonly number[], hosts: readonly number[]): Promise<void> {
  await until(
    `no leftovers of workers ${pids.join(',')}`,
    () => cluster.leftovers(pids, hosts).length === 0,
    20_000,
  ).catch(() => undefined);
  expect(cluster.leftovers(pids, hosts)).toEqual([]);
}

// Under CI=true these tests must run: a CI machine without what they need is a broken one.
if (skip && process.env['CI'] === 'true')
  throw new Error(
    'the dispatch tests need root, redis-server, nsenter, ip and the built CLI: CI=true forbids skipping them',
  );

describe.skipIf(skip)('karotte worker over BullMQ on Redis (T1–T10)', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    cluster = new Cluster();
    cluster.create(3);
    await cluster.startRedis({ aof: true });
    // A task the host can never admit (memory past anything it has): a host fault, retried.
    const huge = path.join(cluster.tasksDir, 'huge-memory');
    fs.cpSync(path.join(EXAMPLES, 'quarterly-revenue'), huge, { recursive: true });
    const task = JSON.parse(fs.readFileSync(path.join(huge, 'task.json'), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(
      path.join(huge, 'task.json'),
      JSON.stringify({
        ...task,
        id: 'huge-memory',
        limits: { ...(task['limits'] as object), memoryBytes: Number.MAX_SAFE_INTEGER },
      }),
    );
  }, 60_000);

  afterAll(async () => {
    await cluster?.destroy();
  }, 60_000);

  it('T1: a worker SIGKILLed mid-episode: the episode is retried elsewhere, one result; the restarted worker reclaims its leftovers before it takes a job', async () => {
    const q = cluster.queue('t1');
    const w1 = cluster.startWorker(1, 't1-w1', ['--queue', 't1', ...TIMINGS]);
    try {
      await w1.waitEvent((e) => e['event'] === 'ready', 30_000);
      const ids = await submit('t1', 't1', writeReplay('t1', slowControl(6)), 2);
      const started = await w1.waitEvent((e) => e['event'] === 'started', 30_000);
      const killedJob = String(started['jobId']);
      await until(
        'the killed episode has its sandbox',
        () => leases().some((l) => l.ownerPid === w1.pid),
        20_000,
      );
      const orphans = leases().filter((l) => l.ownerPid === w1.pid);
      w1.child.kill('SIGKILL');
      await w1.exited;
      const dead = attemptsOf(w1, killedJob);
      const w2 = cluster.startWorker(2, 't1-w2', ['--queue', 't1', ...TIMINGS]);
      const printed = await waitResults('t1', 't1');
      for (const p of printed) expect(p.result?.['status']).toBe('passed');
      await expectOneAcceptedResult(q, ids, printed, dead, [w1, w2]);
      const job = await q.getJob(killedJob);
      // A stall does not use up attempts (scale-out.md finding 5): the stall is counted
      // (stalledCounter), and attemptsMade is 1, the completion's own.
      expect(job!.stalledCounter).toBeGreaterThanOrEqual(1);
      expect(job!.attemptsMade).toBe(1);
      expect(parseJobResult(job!.returnvalue)!.worker).toBe('t1-w2');

      // The killed worker comes back on its host: it reclaims before it is ready.
      const w1b = cluster.startWorker(1, 't1-w1b', ['--queue', 't1', ...TIMINGS]);
      await w1b.waitEvent((e) => e['event'] === 'ready', 30_000);
      const order = w1b.events.map((e) => e['event']);
      expect(order.indexOf('reclaimed')).toBeGreaterThanOrEqual(0);
      expect(order.indexOf('reclaimed')).toBeLessThan(order.indexOf('ready'));
      // Its sandbox is gone (this worker, or another harness on the host starting first, reclaimed it).
      await until(
        "the killed worker's sandbox reclaimed",
        () => orphans.every((o) => cgroupsOf(o.sandboxId).length === 0),
        20_000,
      ).catch(() => undefined);
      for (const orphan of orphans) {
        expect(leases().some((l) => l.uid === orphan.uid && l.ownerPid === w1.pid)).toBe(false);
        expect(pidsOfUid(orphan.uid)).toEqual([]);
        expect(cgroupsOf(orphan.sandboxId)).toEqual([]);
      }
      expect((await w2.stop()).code).toBe(0);
      expect((await w1b.stop()).code).toBe(0);
      await expectNoLeftovers([w1.pid, w2.pid, w1b.pid], [1, 2]);
    } finally {
      await q.close();
    }
  });

  it('T2: a silent partition longer than the lock: the cut-off worker fences itself, the retry elsewhere is the one result, Redis refuses the zombie after the heal', async () => {
    const q = cluster.queue('t2');
    const w1 = cluster.startWorker(1, 't2-w1', ['--queue', 't2', ...TIMINGS]);
    let healed = false;
    try {
      await w1.waitEvent((e) => e['event'] === 'ready', 30_000);
      const ids = await submit('t2', 't2', writeReplay('t2', slowControl(8)), 1);
      const started = await w1.waitEvent((e) => e['event'] === 'started', 30_000);
      const w2 = cluster.startWorker(2, 't2-w2', ['--queue', 't2', ...TIMINGS]);
      await w2.waitEvent((e) => e['event'] === 'ready', 30_000);
      await new Promise((r) => setTimeout(r, 1_000));
      cluster.partition(1);
      const partitionedAt = Date.now();
      const fenced = await w1.waitEvent((e) => e['event'] === 'fenced', 15_000);
      // Its own lease timer, at 0.7 of the lock, without waiting for Redis to answer.
      expect(fenced['how']).toBe('watchdog');
      expect(Number(fenced['at']) - partitionedAt).toBeLessThan(LOCK_MS);
      const retried = await w2.waitEvent((e) => e['event'] === 'started', 30_000);
      expect(retried['jobId']).toBe(started['jobId']);
      await w2.waitEvent((e) => e['event'] === 'completed', 60_000);
      cluster.heal(1);
      healed = true;
      const printed = await waitResults('t2', 't2');
      await expectOneAcceptedResult(q, ids, printed, attemptsOf(w1, ids[0]!), [w1, w2]);
      // Once the link is back, the zombie's late writes reach Redis, which refuses them (no lock).
      await w1.waitEvent((e) => e['event'] === 'write_rejected', 60_000);
      const job = await q.getJob(ids[0]!);
      expect(await job!.getState()).toBe('completed');
      expect(parseJobResult(job!.returnvalue)!.worker).toBe('t2-w2');
      expect((await w1.stop()).code).toBe(0);
      expect((await w2.stop()).code).toBe(0);
      await expectNoLeftovers([w1.pid, w2.pid], [1, 2]);
    } finally {
      if (!healed) cluster.heal(1);
      await q.close();
    }
  });

  it('T3: a partition shorter than the lock: no fence, no retry, one start', async () => {
    const q = cluster.queue('t3');
    const w1 = cluster.startWorker(1, 't3-w1', ['--queue', 't3', ...TIMINGS]);
    try {
      await w1.waitEvent((e) => e['event'] === 'ready', 30_000);
      const ids = await submit('t3', 't3', writeReplay('t3', slowControl(4)), 1);
      await w1.waitEvent((e) => e['event'] === 'started', 30_000);
      await new Promise((r) => setTimeout(r, 500));
      cluster.partition(1);
      await new Promise((r) => setTimeout(r, 600));
      cluster.heal(1);
      const printed = await waitResults('t3', 't3');
      await expectOneAcceptedResult(q, ids, printed, [], [w1]);
      expect(w1.events.filter((e) => e['event'] === 'fenced')).toEqual([]);
      expect(attemptsOf(w1, ids[0]!)).toHaveLength(1);
      expect((await w1.stop()).code).toBe(0);
      await expectNoLeftovers([w1.pid], [1]);
    } finally {
      await q.close();
    }
  });

  it('T5: SIGTERM drains: a running episode finishes within --drain-timeout-ms; past it, it is handed back untouched and run by another worker', async () => {
    const q = cluster.queue('t5');
    try {
      const w1 = cluster.startWorker(1, 't5-w1', ['--queue', 't5', ...TIMINGS]);
      await w1.waitEvent((e) => e['event'] === 'ready', 30_000);
      const [first] = await submit('t5', 't5a', writeReplay('t5a', slowControl(3)), 1);
      await w1.waitEvent((e) => e['event'] === 'started', 30_000);
      const drained = await w1.stop('SIGTERM', 60_000);
      expect(drained.code).toBe(0);
      expect(w1.events.some((e) => e['event'] === 'completed' && e['jobId'] === first)).toBe(true);
      expect(await (await q.getJob(first!))!.getState()).toBe('completed');

      const w2 = cluster.startWorker(1, 't5-w2', ['--queue', 't5', ...TIMINGS, '--drain-timeout-ms', '500']);
      await w2.waitEvent((e) => e['event'] === 'ready', 30_000);
      const [second] = await submit('t5', 't5b', writeReplay('t5b', slowControl(8)), 1);
      await w2.waitEvent((e) => e['event'] === 'started', 30_000);
      await until('the episode has its sandbox', () => leases().some((l) => l.ownerPid === w2.pid), 20_000);
      const stoppedAt = Date.now();
      expect((await w2.stop('SIGTERM', 30_000)).code).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(15_000);
      expect(w2.events.some((e) => e['event'] === 'handed_back' && e['jobId'] === second)).toBe(true);
      const back = await q.getJob(second!);
      expect(await back!.getState()).toBe('waiting');
      expect(back!.attemptsMade).toBe(0);
      await expectNoLeftovers([w1.pid, w2.pid], [1]);
      // Another worker takes it from the start.
      const w3 = cluster.startWorker(2, 't5-w3', ['--queue', 't5', ...TIMINGS]);
      const printed = await waitResults('t5', 't5b');
      await expectOneAcceptedResult(q, [second!], printed, attemptsOf(w2, second!), [w2, w3]);
      expect((await w3.stop()).code).toBe(0);
      await expectNoLeftovers([w3.pid], [2]);
    } finally {
      await q.close();
    }
  });

  it('T6: poison payloads are refused on both sides and fail at once; a host fault is retried, then its error is the result', async () => {
    const q = cluster.queue('t6');
    const redis = cluster.redis();
    try {
      // Producer side: a payload past 16 KiB never reaches Redis.
      const long = writeReplay('t6-long', [{ role: 'assistant', content: 'x'.repeat(20_000) }]);
      const refused = await cluster.cli(3, [
        'submit',
        '--redis',
        REDIS_URL,
        '--queue',
        't6',
        '--run',
        't6-long',
        '--task',
        'quarterly-revenue',
        '--agent',
        'replay',
        '--replay',
        long,
      ]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/INVALID_PAYLOAD.*16384/);
      expect(await redis.exists('{karotte}:t6:karotte-run:t6-long')).toBe(0);
      expect(await q.getJobCounts('wait', 'delayed', 'active')).toEqual({ wait: 0, delayed: 0, active: 0 });

      // Worker side: payloads written to Redis by something else than karotte submit.
      const control = JSON.parse(
        fs.readFileSync(path.join(EXAMPLES, 'quarterly-revenue', 'control.json'), 'utf8'),
      ) as unknown[];
      const base = {
        schema: 1,
        runId: 't6',
        task: { id: 'quarterly-revenue' },
        agent: { kind: 'replay', messages: control },
        submittedAt: Date.now(),
      };
      const poison: Record<string, Record<string, unknown>> = {
        't6-smuggled-0': { ...base, episodeId: 't6-smuggled-0', hidden: { 'expected_total_cents.txt': '1' } },
        't6-digest-0': {
          ...base,
          episodeId: 't6-digest-0',
          task: { id: 'quarterly-revenue', digest: `sha256:${'0'.repeat(64)}` },
        },
        't6-unknown-0': { ...base, episodeId: 't6-unknown-0', task: { id: 'no-such-task' } },
      };
      for (const [id, data] of Object.entries(poison))
        await q.add('episode', data, { jobId: id, attempts: 3 });
      await redis.sadd('{karotte}:t6:karotte-run:t6', ...Object.keys(poison));
      // The host fault: a task no host can admit, two attempts, 200 ms apart.
      const hostFault = await cluster.cli(3, [
        'submit',
        '--redis',
        REDIS_URL,
        '--queue',
        't6',
        '--run',
        't6',
        '--task',
        'huge-memory',
        '--agent',
        'replay',
        '--replay',
        path.join(EXAMPLES, 'quarterly-revenue', 'control.json'),
        '--attempts',
        '2',
        '--retry-delay-ms',
        '200',
      ]);
      expect(hostFault.code, hostFault.stderr).toBe(0);
      const faultId = hostFault.stdout.trim();
      const w1 = cluster.startWorker(1, 't6-w1', ['--queue', 't6', ...TIMINGS]);
      const printed = await waitResults('t6', 't6');
      const codes = Object.fromEntries(
        printed.map((p) => [p.episodeId, (p.result?.['error'] as { code?: string } | null)?.code]),
      );
      expect(codes).toEqual({
        't6-smuggled-0': 'INVALID_PAYLOAD',
        't6-digest-0': 'TASK_DIGEST_MISMATCH',
        't6-unknown-0': 'TASK_UNKNOWN',
        [faultId]: expect.any(String) as string,
      });
      for (const id of Object.keys(poison)) {
        const job = await q.getJob(id);
        expect(await job!.getState()).toBe('failed');
        expect(attemptsOf(w1, id), `${id} is never retried`).toHaveLength(1);
      }
      const fault = printed.find((p) => p.episodeId === faultId)!;
      expect(fault.result?.['status']).toBe('error');
      expect(attemptsOf(w1, faultId)).toHaveLength(2);
      expect(w1.events.filter((e) => e['event'] === 'host_fault' && e['jobId'] === faultId)).toHaveLength(1);
      expect(await (await q.getJob(faultId))!.getState()).toBe('completed');
      expect((await w1.stop()).code).toBe(0);
      await expectNoLeftovers([w1.pid], [1]);
    } finally {
      redis.disconnect();
      await q.close();
    }
  });

  it('T7: a duplicate submit adds nothing: each episode runs once', async () => {
    const q = cluster.queue('t7');
    try {
      const replay = path.join(EXAMPLES, 'quarterly-revenue', 'control.json');
      const ids = await submit('t7', 't7', replay, 2);
      expect(await submit('t7', 't7', replay, 2)).toEqual(ids);
      expect((await q.getJobCounts('wait')).wait).toBe(2);
      const w1 = cluster.startWorker(1, 't7-w1', ['--queue', 't7', ...TIMINGS]);
      const printed = await waitResults('t7', 't7');
      await expectOneAcceptedResult(q, ids, printed, [], [w1]);
      for (const id of ids) expect(attemptsOf(w1, id)).toHaveLength(1);
      expect((await w1.stop()).code).toBe(0);
      await expectNoLeftovers([w1.pid], [1]);
    } finally {
      await q.close();
    }
  });

  it('T10: --warm-pool 1: the episodes pass, a sandbox made ahead waits between them, and SIGTERM destroys it', async () => {
    const q = cluster.queue('t10');
    try {
      const w1 = cluster.startWorker(1, 't10-w1', ['--queue', 't10', ...TIMINGS, '--warm-pool', '1']);
      await w1.waitEvent((e) => e['event'] === 'ready', 30_000);
      const ids = await submit('t10', 't10', path.join(EXAMPLES, 'quarterly-revenue', 'control.json'), 3);
      const printed = await waitResults('t10', 't10');
      await expectOneAcceptedResult(q, ids, printed, [], [w1]);
      for (const p of printed) expect(p.result?.['status']).toBe('passed');
      // No episode runs now: the worker's one lease is the pooled sandbox, made and unused.
      await until(
        'the pool holds a sandbox made ahead',
        () => leases().filter((l) => l.ownerPid === w1.pid).length === 1,
        30_000,
      );
      expect((await w1.stop()).code).toBe(0);
      await expectNoLeftovers([w1.pid], [1]);
    } finally {
      await q.close();
    }
  });

  it('T9: the student cannot reach Redis from inside its sandbox (the bridge address, its own loopback)', async () => {
    const q = cluster.queue('t9');
    try {
      const probe = (host: string, label: string): string =>
        `(timeout 3 bash -c 'exec 3<>/dev/tcp/${host}/6379 && echo PING >&3 && echo REACHED-${label}') 2>/dev/null || echo REFUSED-${label}`;
      const replay = writeReplay('t9', [
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'c0',
              type: 'function',
              function: {
                name: 'bash',
                arguments: JSON.stringify({
                  command: `${probe('198.51.100.1', 'bridge')}; ${probe('127.0.0.1', 'loopback')}`,
                }),
              },
            },
          ],
        },
        { role: 'assistant', content: 'done' },
      ]);
      const w1 = cluster.startWorker(1, 't9-w1', ['--queue', 't9', ...TIMINGS]);
      const ids = await submit('t9', 't9', replay, 1);
      const printed = await waitResults('t9', 't9');
      await expectOneAcceptedResult(q, ids, printed, [], [w1]);
      const stored = parseJobResult((await q.getJob(ids[0]!))!.returnvalue)!;
      const outputs = fs
        .readFileSync(stored.transcript!.path, 'utf8')
        .split('\n')
        .filter((line) => line.includes('"tool_result"'))
        .map((line) => (JSON.parse(line) as { result: { stdout: string } }).result.stdout);
      expect(outputs).toEqual(['REFUSED-bridge\nREFUSED-loopback\n']);
      expect((await w1.stop()).code).toBe(0);
      await expectNoLeftovers([w1.pid], [1]);
    } finally {
      await q.close();
    }
  });

  it("T8: the same episode's worker SIGKILLed twice: it still completes, once; a third death fails it with the stall reason", async () => {
    const q = cluster.queue('t8');
    const pids: number[] = [];
    const all: WorkerProcess[] = [];
    const dead: Attempt[] = [];
    const orphans: { uid: number; sandboxId: string }[] = [];
    /** Start a worker on host 1, let it take `jobId`, SIGKILL it with its episode running. */
    const killOnce = async (jobId: string, n: number): Promise<void> => {
      const w = cluster.startWorker(1, `t8-k${n}`, ['--queue', 't8', ...TIMINGS]);
      all.push(w);
      pids.push(w.pid);
      await w.waitEvent((e) => e['event'] === 'started' && e['jobId'] === jobId, 30_000);
      await until('the episode has its sandbox', () => leases().some((l) => l.ownerPid === w.pid), 20_000);
      orphans.push(...leases().filter((l) => l.ownerPid === w.pid));
      w.child.kill('SIGKILL');
      await w.exited;
      dead.push(...attemptsOf(w, jobId));
    };
    try {
      const [twice] = await submit('t8', 't8a', writeReplay('t8a', slowControl(6)), 1);
      await killOnce(twice!, 1);
      await killOnce(twice!, 2);
      const finisher = cluster.startWorker(2, 't8-finisher', ['--queue', 't8', ...TIMINGS]);
      all.push(finisher);
      pids.push(finisher.pid);
      const printed = await waitResults('t8', 't8a');
      await expectOneAcceptedResult(q, [twice!], printed, dead, all);
      expect((await q.getJob(twice!))!.stalledCounter).toBe(2);
      expect((await finisher.stop()).code).toBe(0);
      // Three deaths of another: past maxStalled 2, the next worker to fetch it fails it.
      const [thrice] = await submit('t8', 't8b', writeReplay('t8b', slowControl(6)), 1);
      for (let n = 3; n <= 5; n += 1) await killOnce(thrice!, n);
      const last = cluster.startWorker(2, 't8-last', ['--queue', 't8', ...TIMINGS]);
      all.push(last);
      pids.push(last.pid);
      const failed = await waitResults('t8', 't8b');
      expect(failed[0]?.result?.['status']).toBe('error');
      const error = failed[0]?.result?.['error'] as { code: string; message: string };
      expect(error.code, error.message).toBe('WORKER_LOST');
      expect(error.message).toMatch(/stalled more than allowable limit/);
      expect(await (await q.getJob(thrice!))!.getState()).toBe('failed');
      expect((await last.stop()).code).toBe(0);
      await expectNoLeftovers(pids, [1, 2]);
      // Every killed worker's sandbox was reclaimed by the next one on its host (or another harness).
      for (const orphan of orphans) {
        expect(pidsOfUid(orphan.uid)).toEqual([]);
        expect(cgroupsOf(orphan.sandboxId)).toEqual([]);
      }
    } finally {
      await q.close();
    }
  });

  it('T4: redis-server SIGKILLed and restarted (AOF): the workers resume and every episode ends with one result', async () => {
    const q = cluster.queue('t4');
    try {
      const w1 = cluster.startWorker(1, 't4-w1', ['--queue', 't4', ...TIMINGS]);
      const w2 = cluster.startWorker(2, 't4-w2', ['--queue', 't4', ...TIMINGS]);
      await w1.waitEvent((e) => e['event'] === 'ready', 30_000);
      await w2.waitEvent((e) => e['event'] === 'ready', 30_000);
      const ids = await submit('t4', 't4', writeReplay('t4', slowControl(2)), 4);
      await Promise.race([
        w1.waitEvent((e) => e['event'] === 'completed', 60_000),
        w2.waitEvent((e) => e['event'] === 'completed', 60_000),
      ]);
      // More than AOF's one second after the submit: the run's list and the jobs are on disk.
      await cluster.redisStop('SIGKILL');
      await new Promise((r) => setTimeout(r, 3_000));
      await cluster.startRedis({ aof: true });
      const printed = await waitResults('t4', 't4', 120_000);
      expect(printed).toHaveLength(4);
      for (const id of ids) {
        const job = await q.getJob(id);
        expect(await job!.getState()).toBe('completed');
        expect(parseJobResult(job!.returnvalue)).not.toBeNull();
      }
      // A completion in the last second before the kill may be lost with AOF everysec: then the
      // episode ran again, and Redis still holds one result for it.
      expect((await w1.stop()).code).toBe(0);
      expect((await w2.stop()).code).toBe(0);
      await expectNoLeftovers([w1.pid, w2.pid], [1, 2]);
    } finally {
      await q.close();
    }
  });
});
