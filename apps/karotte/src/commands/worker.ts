import fs from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { readJsonFile } from '@karotte/base';
import {
  autoConcurrency,
  createWorker,
  DispatchError,
  endpointNameSchema,
  endpointSchema,
  type Endpoint,
  parseRedisUrl,
  type RedisTarget,
  type WorkerEvent,
} from '@karotte/dispatch';
import { createSandboxWorldPool } from '@karotte/core';
import { z } from 'zod';
import type { Command } from './command.js';
import { parseFlags, prepareOutDir, UsageError } from '../args.js';
import { EXIT_FAILURE, EXIT_OK } from '../exit-codes.js';
import { appHiddenPaths, appWorld } from '../app-world.js';

/** The largest Redis password file read, in bytes. */
const MAX_PASSWORD_FILE_BYTES = 4096;

/** The flags every dispatch command shares: where Redis is, which queue. */
export const REDIS_FLAGS = {
  redis: { type: 'string' },
  'redis-password-file': { type: 'string' },
  queue: { type: 'string' },
  prefix: { type: 'string' },
} as const;

/** The help lines of {@link REDIS_FLAGS}. */
export const REDIS_HELP = [
  '<url> is redis://host:port[/db] (or $KAROTTE_REDIS_URL). A password comes from the file',
  '--redis-password-file (mode 0600 or stricter) or the environment variable',
  'KAROTTE_REDIS_PASSWORD, never from the command line (a URL with a password is refused).',
  '--queue (default episodes) and --prefix (default {karotte}) name the BullMQ queue.',
];

/**
 * Where Redis is, from `--redis` (else `$KAROTTE_REDIS_URL`) and the password from
 * `--redis-password-file` (else `$KAROTTE_REDIS_PASSWORD`, then removed from the environment so
 * nothing this process starts inherits it).
 * @throws UsageError naming the flag.
 */
export async function redisTargetFromFlags(flags: {
  redis?: string | undefined;
  'redis-password-file'?: string | undefined;
}): Promise<RedisTarget> {
  const url = flags.redis ?? process.env['KAROTTE_REDIS_URL'];
  if (url === undefined || url === '') throw new UsageError('missing required flag --redis');
  let password = process.env['KAROTTE_REDIS_PASSWORD'];
  Reflect.deleteProperty(process.env, 'KAROTTE_REDIS_PASSWORD');
  const file = flags['redis-password-file'];
  if (file !== undefined) password = await readPasswordFile(path.resolve(file));
  try {
    return parseRedisUrl(url, password);
  } catch (error) {
    if (DispatchError.isInstance(error)) throw new UsageError(`--redis: ${error.message}`);
    throw error;
  }
}

async function readPasswordFile(file: string): Promise<string> {
  let handle;
  try {
    handle = await fs.open(file, 'r');
  } catch (error) {
    throw new UsageError(
      `--redis-password-file ${file} cannot be read (${(error as { code?: string }).code ?? String(error)})`,
    );
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new UsageError(`--redis-password-file ${file} is not a regular file`);
    if ((stats.mode & 0o077) !== 0)
      throw new UsageError(`--redis-password-file ${file} is readable by others: chmod 600 it`);
    if (stats.size > MAX_PASSWORD_FILE_BYTES)
      throw new UsageError(`--redis-password-file ${file} is larger than ${MAX_PASSWORD_FILE_BYTES} bytes`);
    const text = (await handle.readFile('utf8')).replace(/\r?\n$/, '');
    if (text === '') throw new UsageError(`--redis-password-file ${file} is empty`);
    return text;
  } finally {
    await handle.close();
  }
}

/** `--<name> <n>`: an integer in [min, max], or undefined when absent. @throws UsageError */
export function integerFlag(
  name: string,
  value: string | undefined,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    throw new UsageError(`--${name} takes an integer from ${min} to ${max}, not ${JSON.stringify(value)}`);
  return Number(value);
}

/** The queue and prefix flags, checked. */
export function queueFlags(flags: { queue?: string | undefined; prefix?: string | undefined }): {
  queue?: string;
  prefix?: string;
} {
  if (flags.queue !== undefined && !/^[a-z0-9][a-z0-9-]{0,63}$/.test(flags.queue))
    throw new UsageError(`--queue takes [a-z0-9][a-z0-9-]*, not ${JSON.stringify(flags.queue)}`);
  if (flags.prefix !== undefined && !/^[A-Za-z0-9{}_-]{1,64}$/.test(flags.prefix))
    throw new UsageError(`--prefix takes letters, digits and {}_-, not ${JSON.stringify(flags.prefix)}`);
  return {
    ...(flags.queue === undefined ? {} : { queue: flags.queue }),
    ...(flags.prefix === undefined ? {} : { prefix: flags.prefix }),
  };
}

/** The largest --endpoints file read, in bytes. */
const MAX_ENDPOINTS_FILE_BYTES = 64 * 1024;

const endpointsFileSchema = z.record(
  z.string(),
  z
    .object({
      baseUrl: z.string(),
      apiKeyEnv: z.string().optional(),
      apiKeyFile: z.string().optional(),
    })
    .strict(),
);

/** `--endpoints <file.json>`: `{"<name>": {"baseUrl", "apiKeyEnv" | "apiKeyFile"}}`, checked. */
async function readEndpoints(file: string): Promise<Record<string, Endpoint>> {
  const read = await readJsonFile(file, {
    maxBytes: MAX_ENDPOINTS_FILE_BYTES,
    schema: endpointsFileSchema,
    what: '--endpoints',
  });
  if (!read.ok) throw new UsageError(`--endpoints ${file}: ${read.message}`);
  const out: Record<string, Endpoint> = {};
  for (const [name, e] of Object.entries(read.value)) {
    if (!endpointNameSchema.safeParse(name).success)
      throw new UsageError(
        `--endpoints ${file}: ${JSON.stringify(name)} is no endpoint name ([a-z0-9][a-z0-9-]*)`,
      );
    const parsed = endpointSchema.safeParse({
      baseURL: e.baseUrl,
      ...(e.apiKeyEnv === undefined ? {} : { apiKeyEnv: e.apiKeyEnv }),
      ...(e.apiKeyFile === undefined ? {} : { apiKeyFile: path.resolve(path.dirname(file), e.apiKeyFile) }),
    });
    if (!parsed.success)
      throw new UsageError(`--endpoints ${file}: ${name}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    out[name] = parsed.data;
  }
  return out;
}

function describe(event: WorkerEvent): string {
  const { event: name, ...rest } = event;
  const fields = Object.entries(rest)
    .filter(([k, v]) => v !== undefined && k !== 'at')
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return [name, ...fields].join(' ');
}

/** The flags of `karotte worker` (the deploy manifests' unit test checks them against these). */
export const WORKER_FLAGS = {
  ...REDIS_FLAGS,
  tasks: { type: 'string' },
  concurrency: { type: 'string' },
  name: { type: 'string' },
  artifacts: { type: 'string' },
  'lock-ms': { type: 'string' },
  'stalled-ms': { type: 'string' },
  'max-stalled': { type: 'string' },
  'drain-timeout-ms': { type: 'string' },
  'max-episodes': { type: 'string' },
  'exit-when-drained': { type: 'boolean' },
  'idle-ms': { type: 'string' },
  'metrics-port': { type: 'string' },
  'metrics-host': { type: 'string' },
  'no-startup-check': { type: 'boolean' },
  'warm-pool': { type: 'string' },
  endpoints: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const workerCommand: Command = {
  help: [
    'Usage: karotte worker --redis <url> --tasks <dir> [--concurrency <n|auto>]',
    '                      [--redis-password-file <file>] [--queue <name>] [--prefix <prefix>]',
    '                      [--name <id>] [--artifacts <dir>] [--lock-ms <n>] [--stalled-ms <n>]',
    '                      [--max-stalled <n>] [--drain-timeout-ms <n>] [--max-episodes <n>]',
    '                      [--exit-when-drained [--idle-ms <n>]] [--metrics-port <port>]',
    '                      [--metrics-host <addr>] [--endpoints <file.json>]',
    '                      [--warm-pool <w>] [--no-startup-check] [--json]',
    '',
    'Runs episodes that karotte submit put on the queue, each in a fresh sandbox, with the tasks',
    "of its own <dir> (found by id; a job's task digest, when given, must match). No answer key,",
    "grader or hidden file passes through Redis. Results go back as the job's return value, which",
    "Redis stores only for the attempt that still holds the job's lock; result.json and",
    'transcript.jsonl of each attempt are under --artifacts (default /var/lib/karotte/dispatch)',
    '<episode>/<attempt>/. A verdict (passed, failed) is never retried; a host fault (error) is,',
    "up to the job's attempts. An episode whose lock this worker cannot renew for 0.7 x --lock-ms",
    '(default 30000) is aborted and torn down: another worker runs it again. A job of a model',
    'agent names an endpoint of --endpoints, a JSON object {"<name>": {"baseUrl":',
    '"http://.../v1", "apiKeyEnv": "<VAR>" | "apiKeyFile": "<file>"}}: its URL and key are the',
    "worker's own, never in Redis.",
    ...REDIS_HELP,
    'Before the first job: what an earlier worker killed on this host left behind (sandboxes,',
    'cgroups, mounts) is reclaimed, and the host is checked like karotte check (refused when a',
    'defense is weaker; --no-startup-check skips the check). --concurrency auto runs as many as',
    "the host's memory (512 MiB each) and CPUs (4 each) allow. --metrics-port serves /healthz,",
    '/readyz and Prometheus /metrics (on --metrics-host, default 0.0.0.0). SIGTERM or SIGINT',
    'stops taking jobs, lets running episodes finish for --drain-timeout-ms (default 600000),',
    'hands the rest back to the queue untouched and exits 0; a second signal hands them back',
    'at once. --exit-when-drained exits 0 once the queue has been empty for --idle-ms (default',
    '30000); --max-episodes after that many. --warm-pool keeps <w> sandboxes of each task made',
    'and verified ahead of its episodes (0-64, default 0; each is fresh and used once; each',
    "holds a uid and the host's admission reservation of an episode, for up to 4 tasks at once),",
    'drained when the worker stops. Events go to stderr (--json: JSON lines on stdout).',
    'Exit 0 when drained or stopped, 1 when the host cannot confine episodes, leftovers cannot',
    'be reclaimed or Redis cannot be reached, 2 on invalid arguments.',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(argv, WORKER_FLAGS, ['tasks']);
    const redis = await redisTargetFromFlags(flags);
    const concurrency =
      flags.concurrency === 'auto'
        ? autoConcurrency()
        : integerFlag('concurrency', flags.concurrency, 1, 1024);
    const lockMs = integerFlag('lock-ms', flags['lock-ms'], 1_000, 600_000);
    const stalledMs = integerFlag('stalled-ms', flags['stalled-ms'], 500, 600_000);
    const maxStalled = integerFlag('max-stalled', flags['max-stalled'], 0, 100);
    const drainTimeoutMs = integerFlag('drain-timeout-ms', flags['drain-timeout-ms'], 0, 86_400_000);
    const maxEpisodes = integerFlag('max-episodes', flags['max-episodes'], 1, 1e9);
    const metricsPort = integerFlag('metrics-port', flags['metrics-port'], 0, 65_535);
    if (flags['idle-ms'] !== undefined && flags['exit-when-drained'] !== true)
      throw new UsageError('--idle-ms needs --exit-when-drained');
    const idleMs =
      flags['exit-when-drained'] === true
        ? (integerFlag('idle-ms', flags['idle-ms'], 100, 86_400_000) ?? 30_000)
        : undefined;
    if (flags.name !== undefined && !/^[A-Za-z0-9._-]{1,200}$/.test(flags.name))
      throw new UsageError(`--name takes letters, digits and ._-, not ${JSON.stringify(flags.name)}`);
    const tasksDir = path.resolve(flags.tasks!);
    try {
      if (!(await fs.stat(tasksDir)).isDirectory())
        throw new UsageError(`--tasks ${tasksDir} is not a directory`);
    } catch (error) {
      if (error instanceof UsageError) throw error;
      throw new UsageError(`--tasks ${tasksDir} does not exist`);
    }
    const endpoints =
      flags.endpoints === undefined ? undefined : await readEndpoints(path.resolve(flags.endpoints));
    const artifactsDir = await prepareOutDir('artifacts', flags.artifacts ?? '/var/lib/karotte/dispatch');
    const warmPool = integerFlag('warm-pool', flags['warm-pool'], 0, 64) ?? 0;
    // The tasks' directory and every attempt's output are hidden from the student, with the app's own.
    const hidden = [tasksDir, artifactsDir];
    const pool =
      warmPool === 0
        ? undefined
        : createSandboxWorldPool({ hiddenPaths: appHiddenPaths(hidden), size: warmPool });
    const log = (event: WorkerEvent): void => {
      if (flags.json === true) io.stdout.write(`${JSON.stringify(event)}\n`);
      else io.stderr.write(`karotte worker: ${describe(event)}\n`);
    };
    const worker = createWorker({
      redis,
      ...queueFlags(flags),
      tasksDir,
      artifactsDir,
      ...(concurrency === undefined ? {} : { concurrency }),
      ...(flags.name === undefined ? {} : { name: flags.name }),
      ...(lockMs === undefined ? {} : { lockMs }),
      ...(stalledMs === undefined ? {} : { stalledMs }),
      ...(maxStalled === undefined ? {} : { maxStalled }),
      ...(drainTimeoutMs === undefined ? {} : { drainTimeoutMs }),
      ...(maxEpisodes === undefined ? {} : { maxEpisodes }),
      ...(idleMs === undefined ? {} : { idleMs }),
      ...(metricsPort === undefined ? {} : { metricsPort, metricsHost: flags['metrics-host'] ?? '0.0.0.0' }),
      createWorld: pool?.createWorld ?? appWorld(hidden),
      startupCheck: flags['no-startup-check'] !== true,
      ...(endpoints === undefined ? {} : { endpoints }),
      onEvent: log,
    });
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      signals += 1;
      io.stderr.write(
        signals === 1
          ? `karotte worker: ${signal}: draining (no new jobs; running episodes finish or are handed back)\n`
          : `karotte worker: ${signal}: handing running episodes back now\n`,
      );
      if (signals === 1) void worker.drain();
      else worker.handBack();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      try {
        await worker.start();
      } catch (error) {
        await worker.drain().catch(() => undefined);
        if (DispatchError.isInstance(error)) {
          io.stderr.write(`karotte worker: ${error.code}: ${error.message}\n`);
          return EXIT_FAILURE;
        }
        throw error;
      }
      const port = worker.healthPort();
      if (port !== undefined) io.stderr.write(`karotte worker: metrics on port ${port}\n`);
      await worker.closed;
      return EXIT_OK;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      // The sandboxes made ahead, unused, are destroyed like any other; a sandbox that could
      // not go stays leased and is reclaimed at the next start, as after a crash.
      await pool?.close().catch((error: unknown) => {
        io.stderr.write(`karotte worker: draining the warm pool: ${(error as Error).message}\n`);
      });
    }
  },
};
