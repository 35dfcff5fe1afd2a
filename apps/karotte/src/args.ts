import fs from 'node:fs/promises';
import path from 'node:path';
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

/**
 * Create (mode 0700, with parents) or accept the output directory named by `--<flag>`.
 * Anything that makes it unusable (a file in the way, no permission, a read-only file
 * system) is an invalid argument: a UsageError naming the flag, before anything runs.
 */
export async function prepareOutDir(flag: string, dir: string): Promise<string> {
  const resolved = path.resolve(dir);
  try {
    await fs.mkdir(resolved, { recursive: true, mode: 0o700 });
    const stats = await fs.stat(resolved);
    if (!stats.isDirectory()) throw new UsageError(`--${flag} ${resolved} is not a directory`);
    await fs.access(resolved, fs.constants.W_OK | fs.constants.X_OK);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const code = (error as { code?: unknown }).code;
    throw new UsageError(
      `--${flag} ${resolved} cannot be used as the output directory (${typeof code === 'string' ? code : String(error)})`,
    );
  }
  return resolved;
}
