import type { Io } from './main.js';

export interface CommandContext {
  readonly io: Io;
}

export interface Command {
  /** One line for `karotte --help`. */
  readonly summary: string;
  /** Run with the arguments after the command name; returns the exit code. */
  run(argv: readonly string[], context: CommandContext): Promise<number>;
}

/** The commands of the contract, added as each is built (see ../../shared/contract.md). */
export const commands: Readonly<Record<string, Command>> = Object.freeze({});
