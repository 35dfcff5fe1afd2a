import type { Io } from './main.js';
import { checkCommand } from './commands/check.js';
import { demoCommand } from './commands/demo.js';
import { redteamCommand } from './commands/redteam.js';
import { runCommand } from './commands/run.js';
import { validateCommand } from './commands/validate.js';

export interface CommandContext {
  readonly io: Io;
}

export interface Command {
  /** One line for `karotte --help`. */
  readonly summary: string;
  /** The command's own help text for `karotte <command> --help`. */
  readonly help: string;
  /** Run with the arguments after the command name; returns the exit code. */
  run(argv: readonly string[], context: CommandContext): Promise<number>;
}

/** The commands of the contract (docs/contract.md of the repository). */
export const commands: Readonly<Record<string, Command>> = Object.freeze({
  run: runCommand,
  check: checkCommand,
  validate: validateCommand,
  demo: demoCommand,
  redteam: redteamCommand,
});
