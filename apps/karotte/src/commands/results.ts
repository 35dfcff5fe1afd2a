import { createDispatchClient, DispatchError, type RunProgress } from '@karotte/dispatch';
import type { Command } from './command.js';
import { parseFlags, UsageError } from '../args.js';
import { EXIT_FAILURE, EXIT_OK } from '../exit-codes.js';
import { listenForTermination } from '../signals.js';
import { integerFlag, queueFlags, REDIS_FLAGS, REDIS_HELP, redisTargetFromFlags } from './worker.js';

function progressLine(p: RunProgress): string {
  return (
    `${p.done}/${p.total} have a result (${p.active} running, ${p.waiting} waiting): ` +
    `${p.passed} passed, ${p.failed} failed, ${p.error} error`
  );
}

export const resultsCommand: Command = {
  help: [
    'Usage: karotte results --redis <url> --run <run-id> [--wait [--timeout-ms <n>]] [--json]',
    '                       [--redis-password-file <file>] [--queue <name>] [--prefix <prefix>]',
    '',
    'Prints each episode of the run with its result: a line each (episode, status, score), or with',
    '--json a JSON array of {"episodeId", "result"}, result being the result.json of the attempt',
    'Redis accepted (null while the episode has none). Each episode has exactly one result, even',
    'when workers died or lost Redis while running it; an episode that failed for good (a refused',
    'payload, a task the workers lack, workers dying past the limit) has status error saying why.',
    '--wait returns once every episode has a result, with progress on stderr when it is a',
    'terminal; --timeout-ms bounds the wait (exit 1 when it passes).',
    ...REDIS_HELP,
    'Exit 0 when printed, 1 when Redis cannot be reached or the wait timed out, 2 on invalid',
    'arguments.',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(
      argv,
      {
        ...REDIS_FLAGS,
        run: { type: 'string' },
        wait: { type: 'boolean' },
        'timeout-ms': { type: 'string' },
        json: { type: 'boolean' },
      },
      ['run'],
    );
    if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(flags.run!))
      throw new UsageError(
        `--run takes [a-z0-9][a-z0-9-]*, at most 64 characters, not ${JSON.stringify(flags.run)}`,
      );
    const timeoutMs = integerFlag('timeout-ms', flags['timeout-ms'], 1, 1e10);
    if (timeoutMs !== undefined && flags.wait !== true) throw new UsageError('--timeout-ms needs --wait');
    const redis = await redisTargetFromFlags(flags);
    const client = createDispatchClient({ redis, ...queueFlags(flags) });
    const termination = listenForTermination();
    const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    const tty = io.stderr.isTTY === true;
    try {
      const reports =
        flags.wait === true
          ? await client.waitForResults(flags.run!, {
              abortSignal:
                timeout === undefined ? termination.signal : AbortSignal.any([termination.signal, timeout]),
              onProgress: (p) => {
                if (tty) io.stderr.write(`\r\x1b[2K${progressLine(p)}`);
              },
              pollMs: 1_000,
            })
          : await client.results(flags.run!);
      if (tty && flags.wait === true) io.stderr.write('\n');
      if (flags.json === true) {
        io.stdout.write(
          `${JSON.stringify(reports.map((r) => ({ episodeId: r.episodeId, result: r.result })))}\n`,
        );
      } else {
        for (const r of reports) {
          io.stdout.write(
            r.result === null
              ? `${r.episodeId}: ${r.state}\n`
              : `${r.episodeId}: ${r.result.status} score=${r.result.score}` +
                  (r.result.misbehavior.length === 0
                    ? ''
                    : ` misbehavior=${r.result.misbehavior.map((m) => m.code).join(',')}`) +
                  '\n',
          );
        }
        const done = reports.filter((r) => r.result !== null).length;
        io.stdout.write(`${done} of ${reports.length} episodes have a result\n`);
      }
      return EXIT_OK;
    } catch (error) {
      if (DispatchError.isInstance(error)) {
        if (tty) io.stderr.write('\n');
        io.stderr.write(
          `karotte results: ${error.code === 'ABORTED' && timeout?.aborted === true ? `timed out after ${timeoutMs} ms` : `${error.code}: ${error.message}`}\n`,
        );
        return EXIT_FAILURE;
      }
      throw error;
    } finally {
      termination.dispose();
      await client.close();
    }
  },
};
