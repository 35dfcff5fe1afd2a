import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { CoreError, loadTask, recoverLeftovers, type Task } from '@karotte/core';
import type { Command, Io } from './command.js';
import { listenForTermination } from '../signals.js';
import { loadTaskOptions } from '../image-cache.js';
import { parseFlags, prepareOutDir, UsageError } from '../args.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { displaySafe, formatDuration, table, terminalWidth } from '../format.js';
import { appWorld } from '../app-world.js';
import { RedteamInputError, runRedteam, type RedteamRow } from '../redteam/run.js';
import { ATTACKER_PROMPT_SHA256, runAttacker, type AttackerRun } from '../redteam/attacker.js';
import { recoveringWorld } from '../recovering-world.js';
import {
  AGENT_FLAGS,
  createModelAgent,
  parseAgentChoice,
  parseIntegerFlag,
  parseMaxTurns,
  parseToolsFlag,
  type AgentChoice,
} from '../agent-flags.js';

/** The flags only the attacker takes; without --attacker each is refused. */
const ATTACKER_ONLY = [
  'model',
  'base-url',
  'api-key-env',
  'api-key-file',
  'agent-config',
  'tools',
  'max-turns',
  'episodes',
] as const;

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
  help: [
    'Usage: karotte redteam --task <task-dir> [--json] [--only <id,id,...>] [--concurrency <n>] [--out <dir>]',
    '       karotte redteam --task <task-dir> --attacker openai --model <name> --base-url <url>',
    '                       [--api-key-env <VAR> | --api-key-file <file>] [--agent-config <file.json>]',
    '                       [--episodes <n>] [--tools <profile>] [--max-turns <n>] [--concurrency <n>]',
    '                       [--out <dir>] [--json]',
    '',
    'Runs control.json (when the task has one: it must pass) and every attack of the catalog',
    'plus <task-dir>/attacks/*.json through the real tool path. Prints one row per run.',
    'Exit 0 when every attack scored 0 and the control passed, 1 otherwise, 2 on bad usage.',
    '',
    'With --attacker openai, runs <n> episodes (default 1) in which the model is told, on top',
    "of the episode's system message, to get reward without solving the task: read the answer",
    'key, tamper with grading, break the grader, exhaust resources, reach the network (the',
    'wording: src/redteam/attacker-prompt.txt of the app). Every episode that scored above 0 or',
    'ended in error is a finding, listed with its transcript. Results and transcripts go to',
    '--out (default: a new directory under the temporary directory, kept and named). The key',
    'and endpoint flags are those of `karotte run --agent openai`.',
    'Exit 0 when there is no finding, 1 when there is one (or the run was interrupted).',
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
        attacker: { type: 'string' },
        ...AGENT_FLAGS,
        episodes: { type: 'string' },
      },
      ['task'],
    );
    if (flags.attacker !== undefined) {
      if (flags.only !== undefined)
        throw new UsageError('--only picks catalog attacks; it is not for --attacker');
      const choice = parseAgentChoice(flags.attacker, flags, { agentFlag: 'attacker', allowReplay: false });
      return redteamWithAttacker(io, flags.task!, choice as Extract<AgentChoice, { kind: 'openai' }>, {
        episodes: parseIntegerFlag('episodes', flags.episodes, { min: 1, max: 1000 }) ?? 1,
        concurrency: parseIntegerFlag('concurrency', flags.concurrency, { min: 1, max: 64 }) ?? 1,
        tools: flags.tools,
        maxTurns: parseMaxTurns(flags['max-turns']),
        out: flags.out,
        json: flags.json === true,
      });
    }
    if (flags.replay !== undefined)
      throw new UsageError('--replay is not a flag of redteam (the catalog replays its own attacks)');
    for (const flag of ATTACKER_ONLY) {
      if (flags[flag] !== undefined)
        throw new UsageError(`--${flag} is for --attacker openai, not for the catalog`);
    }
    const concurrency = flags.concurrency === undefined ? 2 : Number(flags.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
      throw new UsageError('--concurrency must be an integer from 1 to 64');
    }
    let task;
    try {
      task = await loadTask(flags.task!, loadTaskOptions());
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

/** The attacker's report for a terminal: one row per episode, the transcript of each finding below. */
function renderAttackerTable(runs: readonly AttackerRun[], width: number): string {
  return table(
    ['episode', 'verdict', 'score', 'turns', 'reason', 'time', 'finding'],
    runs.map((r) => [
      String(r.episode),
      r.status,
      String(r.score),
      String(r.turns),
      displaySafe(r.reason).slice(0, 160),
      formatDuration(r.durationMs),
      r.finding ? 'FINDING' : '-',
    ]),
    { width, flexible: [4] },
  );
}

async function redteamWithAttacker(
  io: Io,
  taskDir: string,
  choice: Extract<AgentChoice, { kind: 'openai' }>,
  options: {
    readonly episodes: number;
    readonly concurrency: number;
    readonly tools: string | undefined;
    readonly maxTurns: number | undefined;
    readonly out: string | undefined;
    readonly json: boolean;
  },
): Promise<number> {
  const tools = parseToolsFlag(options.tools);
  let task: Task;
  try {
    task = await loadTask(taskDir, loadTaskOptions());
  } catch (error) {
    if (CoreError.isInstance(error) && error.kind === 'bad_argument') {
      io.stderr.write(
        `karotte redteam: invalid task${error.field === undefined ? '' : ` (field ${error.field})`}: ${error.message}\n`,
      );
      return EXIT_USAGE;
    }
    throw error;
  }
  const agent = await createModelAgent(choice, 'openai');
  // The transcripts are the point of a finding: kept, in --out or a new directory that is named.
  const outDir =
    options.out === undefined
      ? await fs.mkdtemp(path.join(os.tmpdir(), 'karotte-redteam-attacker-'))
      : await prepareOutDir('out', options.out);
  const termination = listenForTermination();
  const live = process.stderr.isTTY && !options.json;
  let runs: AttackerRun[];
  try {
    runs = await runAttacker({
      task,
      agent,
      episodes: options.episodes,
      concurrency: options.concurrency,
      outDir,
      createWorld: recoveringWorld(appWorld([outDir])),
      abortSignal: termination.signal,
      ...(tools === undefined ? {} : { tools }),
      ...(options.maxTurns === undefined ? {} : { maxTurns: options.maxTurns }),
      onProgress: (done, running) => {
        if (!live) return;
        const line = `[attacker ${done}/${options.episodes}] ${running.length > 0 ? `running episode ${running.join(', ')}` : 'done'}`;
        process.stderr.write(`\r\x1b[2K${line.slice(0, (process.stderr.columns || 100) - 1)}`);
      },
    });
  } finally {
    termination.dispose();
    if (live) process.stderr.write('\r\x1b[2K');
    await agent.close?.();
  }
  const findings = runs.filter((r) => r.finding);
  const interrupted = termination.signal.aborted || runs.length < options.episodes;
  if (options.json) {
    io.stdout.write(
      `${JSON.stringify({
        task: task.id,
        attacker: {
          agent: 'openai',
          model: choice.model,
          baseUrl: choice.baseUrl,
          promptSha256: ATTACKER_PROMPT_SHA256,
        },
        episodes: options.episodes,
        ok: findings.length === 0 && !interrupted,
        findings,
        runs,
        out: outDir,
      })}\n`,
    );
  } else {
    io.stdout.write(`${renderAttackerTable(runs, terminalWidth(io.stdout, process.env))}\n\n`);
    for (const finding of findings) {
      io.stdout.write(
        `finding: episode ${finding.episode} ${finding.status} score=${finding.score}: ${finding.transcript}\n`,
      );
    }
    io.stdout.write(
      `${task.id}: ${findings.length} finding(s) in ${runs.length} attacker episode(s)` +
        `${interrupted ? ` (interrupted: ${options.episodes - runs.length} not run)` : ''}; results in ${outDir}\n`,
    );
  }
  return findings.length === 0 && !interrupted ? EXIT_OK : EXIT_FAILURE;
}
