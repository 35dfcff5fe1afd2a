import type { Command } from './commands/command.js';
import { checkCommand } from './commands/check.js';
import { demoCommand } from './commands/demo.js';
import { evalCommand } from './commands/eval.js';
import { redteamCommand } from './commands/redteam.js';
import { resultsCommand } from './commands/results.js';
import { runCommand } from './commands/run.js';
import { serveCommand } from './commands/serve.js';
import { submitCommand } from './commands/submit.js';
import { validateCommand } from './commands/validate.js';
import { viewCommand } from './commands/view.js';
import { workerCommand } from './commands/worker.js';

/** The commands of the contract (docs/contract.md of the repository). */
export const commands: Readonly<Record<string, Command>> = Object.freeze({
  run: runCommand,
  eval: evalCommand,
  check: checkCommand,
  validate: validateCommand,
  demo: demoCommand,
  redteam: redteamCommand,
  serve: serveCommand,
  view: viewCommand,
  worker: workerCommand,
  submit: submitCommand,
  results: resultsCommand,
});
