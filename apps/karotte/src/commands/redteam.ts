import process from 'node:process';
import { CoreError, loadTask, recoverLeftovers } from '@karotte/core';
import type { Command } from './command.js';
import { listenForTermination } from '../signals.js';
import { parseFlags, prepareOutDir, UsageError } from '../args.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { displaySafe, formatDuration, table, terminalWidth } from '../format.js';
import { appWorld } from '../examples.js';
import { RedteamInputError, runRedteam, type RedteamRow } from '../redteam/run.js';

/**
 * The red-team table for a terminal `width` wide: one row per run; `outcome` is `ok`,
 * `ok, expected …` (stopped, but by another defense than the attack expects) or `FAIL`. The
 * reason (terminal-safe: it holds error messages) and the outcome shrink to fit; `--json` has
 * both in full.
 */
export function renderRedteamTable(rows: readonly RedteamRow[], width: number): string {
  return table(
    ['attack', 'class', 'verdict', 'score', 'reason', 'time', 'outcome'],
    rows.map((r) => [
      r.id,
      r.class,
      r.status,
      String(r.score),
      displaySafe(r.reason).slice(0, 120),
      formatDuration(r.durationMs),
      r.ok ? (r.asExpected ? 'ok' : `ok, expected ${(r.expected ?? []).join('|')}`) : 'FAIL',
    ]),
    { width, flexible: [4, 6] },
  );
}

export const redteamCommand: Command = {
  summary: 'run the built-in attack catalog (and the task control) against a task',
  help: [
    'Usage: karotte redteam --task <task-dir> [--json] [--only <id,id,...>] [--concurrency <n>] [--out <dir>]',
    '',
    'Runs control.json (when the task has one: it must pass) and every attack of the catalog',
    'plus <task-dir>/attacks/*.json through the real tool path. Prints one row per run.',
    'Exit 0 when every attack scored 0 and the control passed, 1 otherwise, 2 on bad usage.',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(
      argv,
      {
        task: { type: 'string' },
        json: { type: 'boolean' },
        only: { type: 'string' },
        concurrency: { type: 'string' },
        out: { type: 'string' },
      },
      ['task'],
    );
    const concurrency = flags.concurrency === undefined ? 2 : Number(flags.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
      throw new UsageError('--concurrency must be an integer from 1 to 64');
    }
    let task;
    try {
      task = await loadTask(flags.task!);
    } catch (error) {
      if (CoreError.isInstance(error) && error.kind === 'bad_argument') {
        io.stderr.write(
          `karotte redteam: invalid task${error.field === undefined ? '' : ` (field ${error.field})`}: ${error.message}\n`,
        );
        return EXIT_USAGE;
      }
      throw error;
    }
    const only = flags.only
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const outDir = flags.out === undefined ? undefined : await prepareOutDir('out', flags.out);
    const termination = listenForTermination();
    const live = process.stderr.isTTY && flags.json !== true;
    let rows: RedteamRow[];
    try {
      if (process.getuid?.() === 0) await recoverLeftovers();
      rows = await runRedteam({
        task,
        createWorld: appWorld(outDir === undefined ? [] : [outDir]),
        concurrency,
        abortSignal: termination.signal,
        ...(only === undefined ? {} : { only }),
        ...(outDir === undefined ? {} : { outDir }),
        onProgress: (done, total, running) => {
          if (!live) return;
          const line = `[${done}/${total}] ${running.length > 0 ? `running ${running.join(', ')}` : 'done'}`;
          process.stderr.write(`\r\x1b[2K${line.slice(0, (process.stderr.columns || 100) - 1)}`);
        },
        onResult: (row, done, total) => {
          if (live || flags.json === true) return;
          io.stderr.write(
            `[${done}/${total}] ${row.id}: ${row.status} score=${row.score} (${displaySafe(row.reason).slice(0, 60)})\n`,
          );
        },
      });
    } catch (error) {
      if (error instanceof RedteamInputError) throw new UsageError(error.message);
      throw error;
    } finally {
      termination.dispose();
      if (live) process.stderr.write('\r\x1b[2K');
    }
    const failed = rows.filter((r) => !r.ok);
    if (flags.json === true) {
      io.stdout.write(
        `${JSON.stringify({ task: task.id, ok: failed.length === 0 && !termination.signal.aborted, rows })}\n`,
      );
    } else {
      io.stdout.write(`${renderRedteamTable(rows, terminalWidth(io.stdout, process.env))}\n`);
      const attacks = rows.filter((r) => r.kind === 'attack');
      io.stdout.write(
        `\n${task.id}: ${attacks.filter((r) => r.ok).length}/${attacks.length} attacks scored 0` +
          `${rows.some((r) => r.kind === 'control') ? `, control ${rows.find((r) => r.kind === 'control')!.ok ? 'passed' : 'FAILED'}` : ''}\n`,
      );
    }
    return failed.length === 0 && !termination.signal.aborted ? EXIT_OK : EXIT_FAILURE;
  },
};
