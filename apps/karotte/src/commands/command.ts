// The types every command and the entry point share, in a module of their own so that
// neither imports the other for them (main.ts ↔ commands.ts ↔ commands/*.ts were circles).

/** Where output goes; `isTTY` and `columns` (as process.stdout has them) size tables and lines. */
interface OutputStream {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export interface Io {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
}

export interface CommandContext {
  readonly io: Io;
}

export interface Command {
  /** The command's own help text for `karotte <command> --help`. */
  readonly help: string;
  /** Run with the arguments after the command name; returns the exit code. */
  run(argv: readonly string[], context: CommandContext): Promise<number>;
}
