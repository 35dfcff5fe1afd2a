import { commands } from './commands.js';
import type { CommandContext, Io } from './commands/command.js';
import { VERSION } from './version.js';

import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './exit-codes.js';
import { UsageError } from './args.js';

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  const lines = Object.entries(commands).map(([name, entry]) => `  ${name.padEnd(width)}  ${entry.summary}`);
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

/** What the process entry adds around a command. */
export interface MainOptions {
  /** Runs once a command is known, before its module loads (`--version` and `--help` skip it). */
  readonly beforeCommand?: () => Promise<void>;
}

/** Run the CLI with `argv` (without node and script) and return the exit code. */
export async function main(argv: readonly string[], io: Io, options: MainOptions = {}): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    io.stdout.write(usage());
    return first === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (first === '-v' || first === '--version') {
    io.stdout.write(`${VERSION}\n`);
    return EXIT_OK;
  }
  const entry = Object.hasOwn(commands, first) ? commands[first] : undefined;
  if (entry === undefined) {
    io.stderr.write(
      `karotte: unknown command ${JSON.stringify(first)}. Run 'karotte --help' for the list of commands.\n`,
    );
    return EXIT_USAGE;
  }
  await options.beforeCommand?.();
  const command = await entry.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(`${command.help}\n`);
    return EXIT_OK;
  }
  const context: CommandContext = { io };
  try {
    return await command.run(rest, context);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`karotte ${first}: ${error.message}\n${command.help}\n`);
      return EXIT_USAGE;
    }
    // Never a stack trace for a person: one line, the error's code when it has one.
    const code = (error as { code?: unknown }).code;
    io.stderr.write(
      `karotte ${first}: ${typeof code === 'string' ? `${code}: ` : ''}${(error as Error).message}\n`,
    );
    return EXIT_FAILURE;
  }
}
