import fs from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import type { Agent } from '@karotte/agents';
import {
  CoreError,
  createReplayAgent,
  createSandboxWorldPool,
  loadReplay,
  runEpisode,
  type AssistantMessage,
  type EpisodeResult,
  type Task,
} from '@karotte/core';
import type { Command, Io } from './command.js';
import { listenForTermination } from '../signals.js';
import { parseFlags, prepareOutDir, UsageError } from '../args.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { appHiddenPaths, appWorld } from '../app-world.js';
import { displaySafe, formatDuration, table, terminalWidth, truncate, wrap } from '../format.js';
import { progressWanted } from '../progress.js';
import { recoveringWorld } from '../recovering-world.js';
import {
  AGENT_FLAGS,
  createModelAgent,
  parseAgentChoice,
  parseIntegerFlag,
  parseMaxTurns,
  parseToolsFlag,
} from '../agent-flags.js';
import {
  discoverTasks,
  episodeDir,
  MAX_EPISODES_PER_TASK,
  readEpisode,
  reconcileSettings,
  writeJsonAtomically,
} from '../eval/store.js';
import {
  contractFigures,
  summarizeOverall,
  summarizeTask,
  type EpisodeRecord,
  type OverallSummary,
  type TaskSummary,
} from '../eval/summary.js';

/** One episode of the plan. */
interface PlannedEpisode {
  readonly task: Task;
  readonly index: number;
  readonly dir: string;
}

/** One run's line in `--json`'s `runs` of a task. */
interface RunEntry {
  readonly episode: number;
  readonly dir: string;
  readonly status: EpisodeRecord['status'];
  readonly score: number;
}

/** The summary `--json` prints (contract section 16, with more fields). */
interface EvalReport {
  readonly tasks: (TaskSummary & { readonly runs: readonly RunEntry[] })[];
  readonly overall: OverallSummary;
  readonly out: string;
  /** Episodes planned per task (`--n`). */
  readonly n: number;
  /** Episodes this invocation ran to a result. */
  readonly ran: number;
  /** Episodes found done in `--out` and not run again. */
  readonly kept: number;
  /** Interrupted episodes (a directory without a whole result) removed and run again. */
  readonly redone: number;
  /** Planned episodes that still have no result (the eval was interrupted, or a run could not write its result). */
  readonly missing: number;
  /** This invocation's wall time, in milliseconds. */
  readonly wallTimeMs: number;
}

export const evalCommand: Command = {
  help: [
    'Usage: karotte eval --tasks <dir> --agent openai --model <name> --base-url <url>',
    '                    [--api-key-env <VAR> | --api-key-file <file>] [--agent-config <file.json>]',
    '                    [--n <k>] [--concurrency <c>] --out <out-dir> [--json]',
    '       karotte eval --tasks <dir> --agent replay --replay <replay.json> ... (the same replay for every task)',
    '       common: [--tools <profile>] [--max-turns <n>] [--retry-errors] [--warm-pool <w>]',
    '               [--progress | --quiet]',
    '',
    'Runs <k> episodes (default 1, at most 1000) of every task in <dir> (each subdirectory with a',
    'task.json; or <dir> itself), <c> at a time (default 1), with the model as `karotte run`',
    'drives it. Each run writes result.json and transcript.jsonl in <out-dir>/<task-id>/<NNN>/',
    '(NNN from 000). Run again with the same --out, it runs only the episodes without a result:',
    'an interrupted episode (a directory without a whole result.json) is removed and run again,',
    'never counted; --retry-errors runs the episodes that ended in error again too. <out-dir>',
    'remembers the agent, model, base URL, tools and turn limit, and refuses others.',
    'Prints a summary per task and overall: episodes, passed, mean score, pass rate and pass@k',
    '(the unbiased estimator) over the episodes that reached a verdict, error episodes apart',
    '(never averaged in as 0), misbehavior codes with the episodes that recorded them, tokens,',
    'wall time; --json prints it as JSON (also written to <out-dir>/summary.json; there a task',
    'without a verdict has meanScore and passRate 0, and verdicts 0). Progress',
    '(done, running, failed, errors, ETA) goes to stderr when it is a terminal; --progress prints',
    'a line per episode anyway, --quiet none. SIGINT/SIGTERM stop the running episodes (they are',
    'run again next time), then the summary of what is done is printed. --warm-pool keeps <w>',
    "sandboxes (at most 64) of each task made and verified ahead, and <w> of each step's grader",
    'sandbox, so the episodes after the first start on one already made and grade without waiting',
    "for the grader's setup (each is fresh and used once; re-checked when handed out; drained at",
    'the end). Each waiting sandbox holds a uid and its admission reservation, each waiting grader',
    "a uid, a cgroup and its namespaces' init, for each of the last four tasks used. Default 0:",
    'none.',
    'Exit 0 when every episode reached a verdict, 1 when any ended in error (or some have no',
    'result yet), 2 on invalid arguments or tasks (the flag or field named; nothing is run).',
  ].join('\n'),
  async run(argv, { io }) {
    const started = Date.now();
    const flags = parseFlags(
      argv,
      {
        tasks: { type: 'string' },
        agent: { type: 'string' },
        ...AGENT_FLAGS,
        n: { type: 'string' },
        concurrency: { type: 'string' },
        out: { type: 'string' },
        json: { type: 'boolean' },
        progress: { type: 'boolean' },
        quiet: { type: 'boolean' },
        'retry-errors': { type: 'boolean' },
        'warm-pool': { type: 'string' },
      },
      ['tasks', 'agent', 'out'],
    );
    const choice = parseAgentChoice(flags.agent, flags, { agentFlag: 'agent', allowReplay: true });
    const tools = parseToolsFlag(flags.tools);
    const maxTurns = parseMaxTurns(flags['max-turns']);
    const n = parseIntegerFlag('n', flags.n, { min: 1, max: MAX_EPISODES_PER_TASK }) ?? 1;
    const concurrency = parseIntegerFlag('concurrency', flags.concurrency, { min: 1, max: 64 }) ?? 1;
    const warmPool = parseIntegerFlag('warm-pool', flags['warm-pool'], { min: 0, max: 64 }) ?? 0;
    if (flags.progress === true && flags.quiet === true)
      throw new UsageError('--progress and --quiet contradict each other: give at most one');
    const { tasks, invalid } = await discoverTasks(flags.tasks!);
    if (invalid.length > 0) {
      for (const bad of invalid) io.stderr.write(`karotte eval: invalid task ${bad.dir}: ${bad.message}\n`);
      return EXIT_USAGE;
    }
    if (tasks.length === 0) {
      throw new UsageError(
        `--tasks ${path.resolve(flags.tasks!)} holds no task (no subdirectory with a task.json)`,
      );
    }
    let messages: AssistantMessage[] | undefined;
    if (choice.kind === 'replay') {
      try {
        messages = await loadReplay(choice.replay);
      } catch (error) {
        if (CoreError.isInstance(error) && error.kind === 'bad_argument') {
          io.stderr.write(
            `karotte eval: invalid replay${error.field === undefined ? '' : ` (field ${error.field})`}: ${error.message}\n`,
          );
          return EXIT_USAGE;
        }
        throw error;
      }
    }
    // One model agent for every episode (it keeps no state between turns); a replay agent each.
    const shared = choice.kind === 'openai' ? await createModelAgent(choice, 'openai') : undefined;
    const agentFor = (): Agent => shared ?? createReplayAgent(messages!);
    const outDir = await prepareOutDir('out', flags.out!);
    const mismatch = await reconcileSettings(outDir, {
      agent: choice.kind,
      model: choice.kind === 'openai' ? choice.model : null,
      baseUrl: choice.kind === 'openai' ? choice.baseUrl : null,
      tools: tools?.name ?? 'bash',
      maxTurns: maxTurns ?? null,
      replay: choice.kind === 'replay' ? path.resolve(choice.replay) : null,
    });
    if (mismatch !== null) throw new UsageError(mismatch);

    // What is there already: whole results are kept, the rest is planned.
    const records = new Map<string, EpisodeRecord>();
    const queue: PlannedEpisode[] = [];
    let redone = 0;
    for (const task of tasks) {
      for (let index = 0; index < n; index += 1) {
        const dir = episodeDir(outDir, task.id, index);
        const state = await readEpisode(dir, task.id);
        if (state.kind === 'done' && !(flags['retry-errors'] === true && state.record.status === 'error')) {
          records.set(dir, state.record);
          continue;
        }
        if (state.kind !== 'missing') redone += 1;
        queue.push({ task, index, dir });
      }
    }
    const kept = records.size;
    const wanted = progressWanted(flags, io.stderr.isTTY === true);
    const display = createEvalDisplay(io, {
      live: wanted && io.stderr.isTTY === true,
      lines: wanted,
      total: tasks.length * n,
      concurrency,
      width: terminalWidth(io.stderr, process.env),
    });
    display.update(records, []);

    const termination = listenForTermination((signal) => {
      display.note(`karotte eval: ${signal}: stopping the running episodes (they run again next time)`);
    });
    const pool =
      warmPool === 0
        ? undefined
        : createSandboxWorldPool({ hiddenPaths: appHiddenPaths([outDir]), size: warmPool });
    const createWorld = recoveringWorld(pool?.createWorld ?? appWorld([outDir]));
    const running = new Set<string>();
    let ran = 0;
    let crashed = 0;
    const runOne = async (plan: PlannedEpisode): Promise<void> => {
      const label = `${plan.task.id}/${path.basename(plan.dir)}`;
      // A partial directory (an interrupted run) is removed: its transcript would be appended to.
      await fs.rm(plan.dir, { recursive: true, force: true });
      await fs.mkdir(plan.dir, { recursive: true, mode: 0o700 });
      running.add(label);
      display.update(records, [...running]);
      let result: EpisodeResult | undefined;
      try {
        result = await runEpisode(plan.task, agentFor(), {
          outDir: plan.dir,
          createWorld,
          ...(pool === undefined ? {} : { prepareJudge: pool.prepareJudge }),
          abortSignal: termination.signal,
          ...(tools === undefined ? {} : { tools }),
          ...(maxTurns !== undefined
            ? { maxTurns }
            : messages === undefined
              ? {}
              : { maxTurns: Math.max(messages.length, 1) }),
        });
      } catch (error) {
        crashed += 1;
        display.note(`karotte eval: ${label}: no result: ${displaySafe((error as Error).message)}`);
      }
      running.delete(label);
      if (result !== undefined) {
        if (termination.signal.aborted && result.error?.code === 'ABORTED') {
          // Cut short by this eval's own stop: not a result of the task, so it runs again next time.
          await fs.rm(plan.dir, { recursive: true, force: true });
        } else {
          const state = await readEpisode(plan.dir, plan.task.id);
          if (state.kind === 'done') {
            records.set(plan.dir, state.record);
            ran += 1;
            display.update(records, [...running]);
            display.finished(label, result);
          }
        }
      }
      display.update(records, [...running]);
    };
    let next = 0;
    try {
      await Promise.all(
        Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
          while (next < queue.length && !termination.signal.aborted) {
            const plan = queue[next]!;
            next += 1;
            await runOne(plan);
          }
        }),
      );
    } finally {
      termination.dispose();
      display.close();
      await shared?.close?.();
      await pool?.close().catch((error: unknown) => {
        io.stderr.write(`karotte eval: draining the warm pool: ${displaySafe((error as Error).message)}\n`);
      });
    }

    const summaries = tasks.map((task) => {
      const runs: RunEntry[] = [];
      const taskRecords: EpisodeRecord[] = [];
      for (let index = 0; index < n; index += 1) {
        const dir = episodeDir(outDir, task.id, index);
        const record = records.get(dir);
        if (record === undefined) continue;
        taskRecords.push(record);
        runs.push({ episode: index, dir, status: record.status, score: record.score });
      }
      return { ...summarizeTask(task.id, taskRecords, n), runs };
    });
    const report: EvalReport = {
      tasks: summaries,
      overall: summarizeOverall(summaries),
      out: outDir,
      n,
      ran,
      kept,
      redone,
      missing: tasks.length * n - records.size,
      wallTimeMs: Date.now() - started,
    };
    const printed = {
      ...report,
      tasks: report.tasks.map((task) => contractFigures(task)),
      overall: contractFigures(report.overall),
    };
    await writeJsonAtomically(path.join(outDir, 'summary.json'), printed);
    if (flags.json === true) io.stdout.write(`${JSON.stringify(printed)}\n`);
    else io.stdout.write(renderEvalReport(report, terminalWidth(io.stdout, process.env)));
    if (crashed > 0 || report.missing > 0 || report.overall.errors > 0) return EXIT_FAILURE;
    return EXIT_OK;
  },
};

/** A ratio or score as the table shows it: at most 3 decimals; `-` when undefined. */
function figure(value: number | null | undefined): string {
  if (value === null || value === undefined) return '-';
  return String(Math.round(value * 1000) / 1000);
}

function codes(record: Readonly<Record<string, number>>): string {
  const entries = Object.entries(record);
  return entries.length === 0 ? '-' : entries.map(([code, count]) => `${code}×${count}`).join(' ');
}

/**
 * The human summary: a row per task and one overall (runs with a result, passed of the
 * verdicts, mean score, pass@1, which is the pass rate, and pass@k of the largest k, errors
 * with their codes, misbehavior codes with their episodes), then the tokens, the episodes run
 * and kept, and the time. `--json` has every k and every figure.
 */
function renderEvalReport(report: EvalReport, width: number): string {
  const all = Object.keys(report.overall.passAtK);
  const ks = all.length > 1 ? [all[0]!, all.at(-1)!] : all;
  const header = ['task', 'runs', 'passed', 'mean', ...ks.map((k) => `pass@${k}`), 'errors', 'misbehavior'];
  const row = (id: string, s: TaskSummary | OverallSummary): string[] => [
    id,
    String(s.episodes),
    `${s.passed}/${s.verdicts}`,
    figure(s.meanScore),
    ...ks.map((k) => figure(s.passAtK[k])),
    String(s.errors),
    codes(s.misbehavior),
  ];
  const rows = [...report.tasks.map((t) => row(displaySafe(t.id), t)), row('overall', report.overall)];
  const usage = report.overall.usage;
  const prose = [
    `Mean score and pass@k (pass@1 is the pass rate) count only the ${report.overall.verdicts} episode(s) that reached a verdict; ` +
      `${report.overall.errors} ended in error (a fault of the host or the model endpoint, never counted as a score of 0)` +
      (report.overall.errors === 0
        ? '.'
        : `: ${report.tasks
            .filter((t) => t.errors > 0)
            .map((t) => `${displaySafe(t.id)} ${codes(t.errorCodes)}`)
            .join(', ')}.`),
    `Tokens: ${usage.inputTokens} in (${usage.cachedInputTokens} cached), ${usage.outputTokens} out` +
      (usage.reasoningTokens > 0 ? ` (${usage.reasoningTokens} reasoning)` : '') +
      ` in ${usage.calls} model call(s).`,
    `Episodes: ${report.ran} run now, ${report.kept} kept from earlier runs` +
      (report.redone > 0 ? `, ${report.redone} interrupted one(s) run again` : '') +
      (report.missing > 0
        ? `; ${report.missing} still without a result (run the same command again to resume).`
        : '.'),
    `Time: ${formatDuration(report.wallTimeMs)} wall, ${formatDuration(report.overall.durationMs)} of episodes. Results in ${report.out}`,
  ];
  return `${[
    table(header, rows, { width, flexible: [header.length - 1, 0] }),
    '',
    ...prose.map((line) => wrap(line, width).join('\n')),
  ].join('\n')}\n`;
}

interface EvalDisplay {
  /** Redraw the status line (live) with the records so far and the episodes running. */
  update(records: ReadonlyMap<string, EpisodeRecord>, running: readonly string[]): void;
  /** One episode finished: a line (with `lines`). */
  finished(label: string, result: EpisodeResult): void;
  /** A line that is always printed (a signal, a run that wrote no result). */
  note(line: string): void;
  close(): void;
}

/**
 * The eval's progress on stderr: with `live` (a terminal) a status line rewritten in place
 * (done of total, running, passed, failed, errors, ETA) with a line above it per finished
 * episode; with `lines` only, one line per finished episode; else nothing but notes.
 */
function createEvalDisplay(
  io: Io,
  options: {
    readonly live: boolean;
    readonly lines: boolean;
    readonly total: number;
    readonly concurrency: number;
    readonly width: number;
  },
): EvalDisplay {
  const started = Date.now();
  const durations: number[] = [];
  let lastFinish = started;
  let status = '';
  let records: ReadonlyMap<string, EpisodeRecord> = new Map();
  let running: readonly string[] = [];
  const draw = (): void => {
    if (!options.live) return;
    const all = [...records.values()];
    const passed = all.filter((r) => r.status === 'passed').length;
    const failed = all.filter((r) => r.status === 'failed').length;
    const errors = all.filter((r) => r.status === 'error').length;
    const left = options.total - all.length;
    let eta = '-';
    if (durations.length > 0 && left > 0) {
      // The mean episode so far, for what is left, `concurrency` at a time, counted down from the last finish.
      const mean = durations.reduce((sum, d) => sum + d, 0) / durations.length;
      const estimate = (mean * left) / Math.min(options.concurrency, left);
      eta = formatDuration(Math.max(0, estimate - (Date.now() - lastFinish)));
    } else if (left === 0) eta = '0 ms';
    // What matters most first: a narrow terminal cuts the tail.
    status = truncate(
      `[eval] ${all.length}/${options.total} done, ETA ${eta} (${running.length} running; ` +
        `${passed} passed, ${failed} failed, ${errors} error; ${formatDuration(Date.now() - started)} elapsed)`,
      Math.max(20, options.width - 1),
    );
    io.stderr.write(`\r\x1b[2K${status}`);
  };
  const above = (line: string): void => {
    if (options.live) io.stderr.write('\r\x1b[2K');
    io.stderr.write(`${truncate(line, Math.max(20, options.width))}\n`);
    draw();
  };
  const timer = options.live ? setInterval(draw, 1000) : undefined;
  timer?.unref();
  return {
    update(next, nowRunning) {
      records = next;
      running = nowRunning;
      draw();
    },
    finished(label, result) {
      durations.push(result.durationMs);
      lastFinish = Date.now();
      if (!options.lines) return;
      const detail =
        result.error !== null
          ? ` error=${result.error.code}: ${displaySafe(result.error.message)}`
          : result.misbehavior.length > 0
            ? ` misbehavior=${result.misbehavior.map((m) => m.code).join(',')}`
            : '';
      above(
        `[eval] ${displaySafe(label)}: ${result.status} score=${result.score}${detail} (${result.turns} turns, ${formatDuration(result.durationMs)})`,
      );
    },
    note(line) {
      above(line);
    },
    close() {
      if (timer !== undefined) clearInterval(timer);
      if (options.live && status !== '') io.stderr.write('\r\x1b[2K');
    },
  };
}
