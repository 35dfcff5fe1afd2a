import { parseArgs } from 'node:util';

/** A usage error: the CLI prints the message and the command's help, and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface FlagSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
}

export type Flags<O extends Record<string, FlagSpec>> = {
  [K in keyof O]?: O[K]['type'] extends 'string' ? string : boolean;
};

/**
 * Parse a command's flags strictly: unknown flags, missing values and positionals are usage
 * errors that name the offending flag.
 */
export function parseFlags<O extends Record<string, FlagSpec>>(
  argv: readonly string[],
  options: O,
  required: readonly (keyof O & string)[] = [],
): Flags<O> {
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError(cleanMessage((error as Error).message));
  }
  for (const name of required) {
    if (values[name] === undefined) throw new UsageError(`missing required flag --${name}`);
    if (values[name] === '') throw new UsageError(`flag --${name} needs a value`);
  }
  return values as Flags<O>;
}

function cleanMessage(message: string): string {
  return message
    .replace(/\. To specify a positional argument.*$/s, '')
    .replace(/^Unknown option '([^']+)'.*$/s, 'unknown flag $1');
}
