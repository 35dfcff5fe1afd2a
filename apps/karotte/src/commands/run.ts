import path from 'node:path';
import process from 'node:process';
import type { Agent } from '@karotte/agents';
import { CoreError, createReplayAgent, loadReplay, loadTask, runEpisode } from '@karotte/core';
import type { Command } from './command.js';
import { listenForTermination } from '../signals.js';
import { parseFlags, prepareOutDir, UsageError } from '../args.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { appWorld } from '../app-world.js';
import { displaySafe, formatDuration, terminalWidth } from '../format.js';
import { createProgressPrinter, explainResult, progressWanted } from '../progress.js';
import { recoveringWorld } from '../recovering-world.js';
import { loadTaskOptions } from '../image-cache.js';
import {
  AGENT_FLAGS,
  createModelAgent,
  parseAgentChoice,
  parseMaxTurns,
  parseToolsFlag,
} from '../agent-flags.js';

export const runCommand: Command = {
  help: [
    'Usage: karotte run --task <task-dir> --agent replay --replay <replay.json> --out <out-dir>',
    '       karotte run --task <task-dir> --agent openai --model <name> --base-url <url>',
    '                   [--api-key-env <VAR> | --api-key-file <file>] [--agent-config <file.json>]',
    '                   --out <out-dir>',
    '       common: [--tools bash|karotte|anthropic|openai] [--max-turns <n>] [--json]',
    '               [--progress | --quiet]',
    '',
    'Runs one episode in a fresh sandbox, collects the submission and grades it. Writes',
    '<out-dir>/result.json and <out-dir>/transcript.jsonl (the directory is created).',
    'Relative paths are from the current directory (under npm run: the directory npm ran in).',
    '--agent openai drives a model behind an OpenAI-compatible chat-completions endpoint',
    '(POST <url>/chat/completions: vLLM, SGLang, a hosted API; the URL ends in /v1). Its API key',
    'comes from the environment variable --api-key-env (default OPENAI_API_KEY) or from a file',
    'only its owner can read (--api-key-file), never from the command line; a server without',
    "keys takes any word (OPENAI_API_KEY=EMPTY). --agent-config is a JSON object of the agent's",
    'other options (sampling, extraBody, headers, timeoutMs, retry, stream, ...). 429s, 5xx and',
    'dropped connections are retried; an endpoint that stays down ends the run as error.',
    "--tools picks the tool profile (default bash: the contract's one tool); --max-turns the",
    "turns per step (default: the replay's length, 200 for a model).",
    'Progress (each model turn, each tool call, collect, grade) goes to stderr only when stderr',
    'is a terminal and --json is not given: a pipe or a file gets none, so nothing blocks on a',
    'caller that never reads stderr. --progress prints it anyway (also with --json), --quiet',
    'never. stdout gets one summary line, then why a run that failed scored what it did',
    '(--json: the result instead). A grader interpreter the harness cannot trust (Node.js under',
    '/tmp, a home or a hidden directory) is refused before the episode starts.',
    'Exit 0 when the episode reached a verdict (passed or failed), 1 on error (including a',
    'host that cannot give the confinement the task needs, and a model endpoint that stays',
    'down), 2 on invalid arguments or task (the flag or field named; nothing is run).',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(
      argv,
      {
        task: { type: 'string' },
        agent: { type: 'string' },
        ...AGENT_FLAGS,
        out: { type: 'string' },
        json: { type: 'boolean' },
        progress: { type: 'boolean' },
        quiet: { type: 'boolean' },
      },
      ['task', 'agent', 'out'],
    );
    const choice = parseAgentChoice(flags.agent, flags, { agentFlag: 'agent', allowReplay: true });
    const tools = parseToolsFlag(flags.tools);
    const maxTurns = parseMaxTurns(flags['max-turns']);
    if (flags.progress === true && flags.quiet === true)
      throw new UsageError('--progress and --quiet contradict each other: give at most one');
    let task;
    let messages;
    try {
      task = await loadTask(flags.task!, loadTaskOptions());
      if (choice.kind === 'replay') messages = await loadReplay(choice.replay);
    } catch (error) {
      if (CoreError.isInstance(error) && error.kind === 'bad_argument') {
        io.stderr.write(
          `karotte run: invalid ${error.code === 'INVALID_REPLAY' ? 'replay' : 'task'}${error.field === undefined ? '' : ` (field ${error.field})`}: ${error.message}\n`,
        );
        return EXIT_USAGE;
      }
      throw error;
    }
    // The key is read here, before anything is made: a key that cannot be had is exit 2.
    const agent: Agent =
      choice.kind === 'replay' ? createReplayAgent(messages ?? []) : await createModelAgent(choice, 'openai');
    const outDir = await prepareOutDir('out', flags.out!);
    const termination = listenForTermination((signal) => {
      io.stderr.write(`karotte run: ${signal}: stopping the episode and tearing down\n`);
    });
    const onProgress = progressWanted(flags, io.stderr.isTTY === true)
      ? createProgressPrinter((line) => io.stderr.write(line), {
          width: terminalWidth(io.stderr, process.env),
          steps: task.steps.length,
          model: choice.kind === 'openai',
        })
      : undefined;
    try {
      const result = await runEpisode(task, agent, {
        outDir,
        createWorld: recoveringWorld(appWorld([outDir])),
        abortSignal: termination.signal,
        // The replay ends the episode (contract section 5), not a turn limit below its length.
        ...(maxTurns !== undefined
          ? { maxTurns }
          : messages === undefined
            ? {}
            : { maxTurns: Math.max(messages.length, 1) }),
        ...(tools === undefined ? {} : { tools }),
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
      await agent.close?.();
    }
  },
};
