import path from 'node:path';
import process from 'node:process';
import { loadTask, recoverLeftovers } from '@karotte/core';
import type { Command } from './command.js';
import { listenForTermination } from '../signals.js';
import { parseFlags } from '../args.js';
import { appWorld } from '../app-world.js';
import { DEMO_PLAN, EXAMPLES_DIR } from '../examples.js';
import { EXIT_FAILURE, EXIT_OK } from '../exit-codes.js';
import { displaySafe, formatDuration } from '../format.js';
import { runRedteam, type RedteamRow } from '../redteam/run.js';

export const demoCommand: Command = {
  help: [
    'Usage: karotte demo [--json]',
    '',
    'Runs each example task shipped with the app: its control.json, which solves the task',
    'honestly and must pass with score 1, then a handful of attacks, which must score 0 with',
    'their reasons. One line per run. Exit 0 when every run behaved, 1 otherwise. Needs root.',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(argv, { json: { type: 'boolean' } });
    const termination = listenForTermination();
    const all: (RedteamRow & { example: string })[] = [];
    try {
      if (process.getuid?.() === 0) await recoverLeftovers();
      for (const { example, attacks } of DEMO_PLAN) {
        const task = await loadTask(path.join(EXAMPLES_DIR, example));
        const rows = await runRedteam({
          task,
          createWorld: appWorld(),
          only: attacks,
          abortSignal: termination.signal,
        });
        for (const row of rows) {
          all.push({ ...row, example });
          if (flags.json !== true) {
            const what = row.kind === 'control' ? 'control (honest solution)' : `attack ${row.id}`;
            io.stdout.write(
              `${row.ok ? 'ok  ' : 'FAIL'} ${example.padEnd(18)} ${what.padEnd(32)} ${row.status.padEnd(6)} score=${row.score}  ${displaySafe(row.reason).slice(0, 70)}  (${formatDuration(row.durationMs)})\n`,
            );
          }
        }
      }
    } finally {
      termination.dispose();
    }
    const ok = all.every((r) => r.ok) && !termination.signal.aborted;
    if (flags.json === true) io.stdout.write(`${JSON.stringify({ ok, runs: all })}\n`);
    else {
      const controls = all.filter((r) => r.kind === 'control');
      const attacks = all.filter((r) => r.kind === 'attack');
      io.stdout.write(
        `\n${controls.filter((r) => r.ok).length}/${controls.length} controls passed with score 1; ` +
          `${attacks.filter((r) => r.ok).length}/${attacks.length} attacks scored 0.\n`,
      );
    }
    return ok ? EXIT_OK : EXIT_FAILURE;
  },
};
