import type { Command } from './commands/command.js';

/**
 * A command of the table: its one-line summary for `karotte --help`, and its module, imported
 * only when the command runs (or shows its own help). `karotte run` never loads the server,
 * the queue client or the viewer; `karotte --version` loads no command at all.
 */
export interface CommandEntry {
  readonly summary: string;
  load(): Promise<Command>;
}

/** The commands of the contract (docs/contract.md of the repository). */
export const commands: Readonly<Record<string, CommandEntry>> = Object.freeze({
  run: {
    summary: 'run one episode of a task with the replay agent or a model, then collect and grade it',
    load: async () => (await import('./commands/run.js')).runCommand,
  },
  eval: {
    summary: 'run K episodes of every task in a directory (resumable) and summarize the scores',
    load: async () => (await import('./commands/eval.js')).evalCommand,
  },
  check: {
    summary: 'show each defense this host can give and how it is enforced',
    load: async () => (await import('./commands/check.js')).checkCommand,
  },
  validate: {
    summary: 'check a task directory against the task.json contract, without running anything',
    load: async () => (await import('./commands/validate.js')).validateCommand,
  },
  demo: {
    summary: "run the example tasks' honest controls (score 1) and a handful of attacks (score 0)",
    load: async () => (await import('./commands/demo.js')).demoCommand,
  },
  redteam: {
    summary: 'run the built-in attack catalog (and the task control), or an attacker model, against a task',
    load: async () => (await import('./commands/redteam.js')).redteamCommand,
  },
  serve: {
    summary:
      'serve episodes of a directory of tasks over HTTP to RL trainers (bearer token, loopback or a unix socket)',
    load: async () => (await import('./commands/serve.js')).serveCommand,
  },
  view: {
    summary: 'show runs, transcripts and evidence in a web page on loopback, or export it as one HTML file',
    load: async () => (await import('./commands/view.js')).viewCommand,
  },
  worker: {
    summary: 'take episodes from a Redis queue (BullMQ) and run them here, until SIGTERM',
    load: async () => (await import('./commands/worker.js')).workerCommand,
  },
  submit: {
    summary: 'put episodes of a task on the Redis queue for karotte worker, printing their ids',
    load: async () => (await import('./commands/submit.js')).submitCommand,
  },
  image: {
    summary: "import, list and prune task images (a task's own root file system), or build a Debian one",
    load: async () => (await import('./commands/image.js')).imageCommand,
  },
  init: {
    summary: 'create a task directory that validates, whose control passes and that redteam holds',
    load: async () => (await import('./commands/init.js')).initCommand,
  },
  results: {
    summary: 'print the results of a run that karotte submit queued (--wait: until all are in)',
    load: async () => (await import('./commands/results.js')).resultsCommand,
  },
});
