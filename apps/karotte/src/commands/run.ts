import path from 'node:path';
import process from 'node:process';
import { KarotteError } from '@karotte/base';
import {
  CoreError,
  createReplayAgent,
  loadReplay,
  loadTask,
  recoverLeftovers,
  runEpisode,
  type WorldFactory,
} from '@karotte/core';
import type { Command } from './command.js';
import { listenForTermination } from '../signals.js';
import { parseFlags, prepareOutDir, UsageError } from '../args.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { appWorld } from '../examples.js';
import { displaySafe, formatDuration, terminalWidth } from '../format.js';
import { createProgressPrinter, explainResult, progressWanted } from '../progress.js';

export const runCommand: Command = {
  summary: 'run one episode of a task with the replay agent, then collect and grade it',
  help: [
    'Usage: karotte run --task <task-dir> --agent replay --replay <replay.json> --out <out-dir>',
    '                   [--json] [--progress | --quiet]',
    '',
    'Runs one episode in a fresh sandbox, collects the submission and grades it. Writes',
    '<out-dir>/result.json and <out-dir>/transcript.jsonl (the directory is created).',
    'Relative paths are from the current directory (under npm run: the directory npm ran in).',
    'Progress (each tool call, its exit code and duration, collect, grade) goes to stderr only',
    'when stderr is a terminal and --json is not given: a pipe or a file gets none, so nothing',
    'blocks on a caller that never reads stderr. --progress prints it anyway (also with --json),',
    '--quiet never. stdout gets one summary line, then why a run that failed scored what it did',
    '(--json: the result instead). A grader interpreter the harness cannot trust (Node.js under',
    '/tmp, a home or a hidden directory) is refused before the episode starts.',
    'Exit 0 when the episode reached a verdict (passed or failed), 1 on error (including a',
    'host that cannot give the confinement the task needs), 2 on invalid arguments or task.',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(
      argv,
      {
        task: { type: 'string' },
        agent: { type: 'string' },
        replay: { type: 'string' },
        out: { type: 'string' },
        json: { type: 'boolean' },
        progress: { type: 'boolean' },
        quiet: { type: 'boolean' },
      },
      ['task', 'agent', 'out'],
    );
    if (flags.agent !== 'replay')
      throw new UsageError(`--agent must be "replay" (got ${JSON.stringify(flags.agent)})`);
    if (flags.replay === undefined)
      throw new UsageError('missing required flag --replay (the replay agent needs it)');
    if (flags.progress === true && flags.quiet === true)
      throw new UsageError('--progress and --quiet contradict each other: give at most one');
    let task;
    let messages;
    try {
      task = await loadTask(flags.task!);
      messages = await loadReplay(flags.replay);
    } catch (error) {
      if (CoreError.isInstance(error) && error.kind === 'bad_argument') {
        io.stderr.write(
          `karotte run: invalid ${error.code === 'INVALID_REPLAY' ? 'replay' : 'task'}${error.field === undefined ? '' : ` (field ${error.field})`}: ${error.message}\n`,
        );
        return EXIT_USAGE;
      }
      throw error;
    }
    const outDir = await prepareOutDir('out', flags.out!);
    const termination = listenForTermination((signal) => {
      io.stderr.write(`karotte run: ${signal}: stopping the episode and tearing down\n`);
    });
    const onProgress = progressWanted(flags, io.stderr.isTTY === true)
      ? createProgressPrinter((line) => io.stderr.write(line), {
          width: terminalWidth(io.stderr, process.env),
          steps: task.steps.length,
        })
      : undefined;
    try {
      const result = await runEpisode(task, createReplayAgent(messages), {
        outDir,
        createWorld: recoveringWorld(appWorld([outDir])),
        abortSignal: termination.signal,
        // The replay ends the episode (contract section 5), not a turn limit below its length.
        maxTurns: Math.max(messages.length, 1),
        ...(onProgress === undefined ? {} : { onProgress }),
      });
      if (flags.json === true) io.stdout.write(`${JSON.stringify(result)}\n`);
      else {
        const reasons = result.misbehavior.map((m) => m.code).join(', ');
        io.stdout.write(
          `${result.taskId}: ${result.status} score=${result.score}` +
            (reasons === '' ? '' : ` misbehavior=${reasons}`) +
            (result.error === null
              ? ''
              : ` error=${result.error.code}: ${displaySafe(result.error.message)}`) +
            ` (uid ${result.sandbox.uid ?? '-'}, ${formatDuration(result.durationMs)}) -> ${path.join(outDir, 'result.json')}\n`,
        );
        for (const line of explainResult(result, terminalWidth(io.stdout, process.env))) {
          io.stdout.write(`${line}\n`);
        }
      }
      return result.status === 'error' ? EXIT_FAILURE : EXIT_OK;
    } finally {
      termination.dispose();
    }
  },
};

/**
 * `create`, after reclaiming what harnesses killed earlier left behind (as root). Recovery is
 * the first part of making the world, inside the episode: when it fails (an unsafe state
 * directory, a leftover that will not go), the run refuses to start as on any host that cannot
 * give the sandbox: status `error`, and result.json says why. Run before the episode, its
 * throw used to end the command with exit 1 and no result.json at all.
 */
function recoveringWorld(create: WorldFactory): WorldFactory {
  return async (spec) => {
    if (process.getuid?.() === 0) {
      try {
        await recoverLeftovers();
      } catch (error) {
        const reason = KarotteError.isInstance(error)
          ? `${error.code}: ${error.message}`
          : error instanceof Error
            ? error.message
            : String(error);
        throw new CoreError(
          'CONFINEMENT_UNAVAILABLE',
          `cannot reclaim the leftovers of earlier runs, so no sandbox was made: ${reason}`,
          { cause: error },
        );
      }
    }
    return create(spec);
  };
}
