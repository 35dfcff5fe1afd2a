import fs from 'node:fs/promises';
import path from 'node:path';
import { CoreError, loadReplay, taskIdSchema } from '@karotte/core';
import { createDispatchClient, DispatchError, TaskStore, taskDigest } from '@karotte/dispatch';
import type { Command } from './command.js';
import { parseFlags, UsageError } from '../args.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { integerFlag, queueFlags, REDIS_FLAGS, REDIS_HELP, redisTargetFromFlags } from './worker.js';

/** The task a submit names: its id, and its digest when a copy of it is here. */
async function resolveTask(
  task: string,
  tasksDir: string | undefined,
): Promise<{ id: string; digest?: string }> {
  const asDir = path.resolve(task);
  const isDir = await fs
    .stat(path.join(asDir, 'task.json'))
    .then((s) => s.isFile())
    .catch(() => false);
  if (isDir) {
    const store = await TaskStore.open(asDir);
    const [id] = store.ids();
    if (id === undefined)
      throw new UsageError(`--task ${asDir}: not a valid task directory (karotte validate says why)`);
    return { id, digest: await taskDigest(asDir) };
  }
  if (!taskIdSchema.safeParse(task).success)
    throw new UsageError(
      `--task takes a task id ([a-z0-9][a-z0-9-]*) or a task directory, not ${JSON.stringify(task)}`,
    );
  if (tasksDir === undefined) return { id: task };
  const stored = await (await TaskStore.open(path.resolve(tasksDir))).get(task);
  if (stored === null) throw new UsageError(`--tasks ${tasksDir} has no task ${task}`);
  return { id: task, digest: stored.digest };
}

export const submitCommand: Command = {
  help: [
    'Usage: karotte submit --redis <url> --run <run-id> --task <task-id|task-dir> --agent replay',
    '                      --replay <file> [--n <k>] [--first <i>] [--tasks <dir>] [--max-turns <n>]',
    '       karotte submit ... --agent openai --endpoint <name> --model <name> [--policy-version <v>]',
    '                      [--attempts <n>] [--retry-delay-ms <n>] [--redis-password-file <file>]',
    '                      [--queue <name>] [--prefix <prefix>] [--json]',
    '',
    'Enqueues <k> episodes (default 1) of the task and prints one episode id per line (--json: a',
    'JSON array). Episode ids are <run-id>-<task-id>-<i> for i from --first (default 0), so the',
    'same submit again adds nothing: each episode runs once. The job carries the task id, its',
    'digest when this host has the task (--task <dir>, or --tasks <dir> holding it; the worker',
    "refuses a different copy) and the replay; never the task's files. A payload past 16 KiB is",
    'refused. A host fault is retried --attempts times (default 3), after --retry-delay-ms',
    '(default 10000, doubling); a verdict never is. --agent openai names a model and an endpoint',
    "the workers know (their --endpoints): the endpoint's URL and key never pass through Redis.",
    ...REDIS_HELP,
    'Exit 0 when enqueued, 1 when Redis cannot be reached, 2 on invalid arguments.',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(
      argv,
      {
        ...REDIS_FLAGS,
        run: { type: 'string' },
        task: { type: 'string' },
        tasks: { type: 'string' },
        agent: { type: 'string' },
        replay: { type: 'string' },
        endpoint: { type: 'string' },
        model: { type: 'string' },
        'policy-version': { type: 'string' },
        n: { type: 'string' },
        first: { type: 'string' },
        'max-turns': { type: 'string' },
        attempts: { type: 'string' },
        'retry-delay-ms': { type: 'string' },
        json: { type: 'boolean' },
      },
      ['run', 'task', 'agent'],
    );
    if (flags.agent !== 'replay' && flags.agent !== 'openai')
      throw new UsageError(`--agent takes replay or openai, not ${JSON.stringify(flags.agent)}`);
    const replayAgent = flags.agent === 'replay';
    if (replayAgent && flags.replay === undefined)
      throw new UsageError('--agent replay needs --replay <file>');
    if (!replayAgent && (flags.endpoint === undefined || flags.model === undefined))
      throw new UsageError(
        "--agent openai needs --endpoint <name> (one of the workers' --endpoints) and --model <name>",
      );
    for (const flag of replayAgent
      ? (['endpoint', 'model', 'policy-version'] as const)
      : (['replay'] as const))
      if (flags[flag] !== undefined)
        throw new UsageError(`--${flag} does not go with --agent ${flags.agent}`);
    if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(flags.run!))
      throw new UsageError(
        `--run takes [a-z0-9][a-z0-9-]*, at most 64 characters, not ${JSON.stringify(flags.run)}`,
      );
    const n = integerFlag('n', flags.n, 1, 100_000) ?? 1;
    const first = integerFlag('first', flags.first, 0, 1e9) ?? 0;
    const maxTurns = integerFlag('max-turns', flags['max-turns'], 1, 100_000);
    const attempts = integerFlag('attempts', flags.attempts, 1, 20);
    const retryDelayMs = integerFlag('retry-delay-ms', flags['retry-delay-ms'], 0, 3_600_000);
    const redis = await redisTargetFromFlags(flags);
    const task = await resolveTask(flags.task!, flags.tasks);
    let messages;
    try {
      if (replayAgent) messages = await loadReplay(flags.replay!);
    } catch (error) {
      if (CoreError.isInstance(error)) {
        io.stderr.write(
          `karotte submit: invalid replay${error.field === undefined ? '' : ` (field ${error.field})`}: ${error.message}\n`,
        );
        return EXIT_USAGE;
      }
      throw error;
    }
    const client = createDispatchClient({ redis, ...queueFlags(flags) });
    try {
      const ids = await client.submit({
        runId: flags.run!,
        task,
        agent: replayAgent
          ? { kind: 'replay', messages: messages ?? [] }
          : {
              kind: 'openai',
              endpoint: flags.endpoint!,
              model: flags.model!,
              ...(flags['policy-version'] === undefined ? {} : { policyVersion: flags['policy-version'] }),
            },
        n,
        first,
        ...(maxTurns === undefined ? {} : { maxTurns }),
        ...(attempts === undefined ? {} : { attempts }),
        ...(retryDelayMs === undefined ? {} : { retryDelayMs }),
      });
      io.stdout.write(flags.json === true ? `${JSON.stringify(ids)}\n` : ids.map((id) => `${id}\n`).join(''));
      return EXIT_OK;
    } catch (error) {
      if (DispatchError.isInstance(error)) {
        io.stderr.write(`karotte submit: ${error.code}: ${error.message}\n`);
        return error.code === 'INVALID_PAYLOAD' ? EXIT_USAGE : EXIT_FAILURE;
      }
      throw error;
    } finally {
      await client.close();
    }
  },
};
