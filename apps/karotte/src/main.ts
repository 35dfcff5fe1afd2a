import { commands, type CommandContext } from './commands.js';
import { VERSION } from './version.js';

/** Exit codes of the contract: 0 verdict/ok, 1 error or weaker confinement, 2 bad usage. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export interface Io {
  readonly stdout: { write(chunk: string): unknown };
  readonly stderr: { write(chunk: string): unknown };
}

export function usage(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  const lines = Object.entries(commands).map(
    ([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`,
  );
  return [
    'Usage: karotte <command> [options]',
    '',
    'Karotte runs reinforcement-learning episodes that a model cannot cheat.',
    '',
    'Commands:',
    ...lines,
    '',
    'Options:',
    "  -h, --help     show this help, or a command's help with <command> --help",
    '  -v, --version  print the version',
    '',
    'Exit status: 0 success, 1 failure or weaker confinement, 2 invalid arguments.',
    '',
  ].join('\n');
}

/** Run the CLI with `argv` (without node and script) and return the exit code. */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    io.stdout.write(usage());
    return first === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (first === '-v' || first === '--version') {
    io.stdout.write(`${VERSION}\n`);
    return EXIT_OK;
  }
  const command = Object.hasOwn(commands, first) ? commands[first] : undefined;
  if (command === undefined) {
    io.stderr.write(
      `karotte: unknown command ${JSON.stringify(first)}. Run 'karotte --help' for the list of commands.\n`,
    );
    return EXIT_USAGE;
  }
  const context: CommandContext = { io };
  return command.run(rest, context);
}
