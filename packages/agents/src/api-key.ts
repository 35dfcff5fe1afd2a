import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import process from 'node:process';
import { BadArgumentError } from '@karotte/base';

/** The largest API key file read, in bytes. */
const MAX_KEY_FILE_BYTES = 16 * 1024;

/** Where the API key comes from: an environment variable, or a file only its owner can read. */
export interface ApiKeySource {
  /** The environment variable holding the key. */
  readonly apiKeyEnv?: string | undefined;
  /** A file holding the key (a trailing newline is ignored), owned by this process's user, mode 0600 or 0400. */
  readonly apiKeyFile?: string | undefined;
}

/**
 * Read the API key: from `apiKeyFile` when given, else from the environment variable
 * `apiKeyEnv`. Never from a command line. The key is checked to be one printable token (it
 * goes into an HTTP header) and is never part of an error message.
 *
 * @throws BadArgumentError naming `apiKeyEnv` or `apiKeyFile` when the key cannot be had: the
 *   variable is unset or empty, the file is missing, not a regular file, not owned by this
 *   process's user, or readable or writable by group or others.
 */
export async function readApiKey(
  source: ApiKeySource,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<string> {
  if (source.apiKeyFile !== undefined) return checkKey(await readKeyFile(source.apiKeyFile), 'apiKeyFile');
  const name = source.apiKeyEnv ?? 'OPENAI_API_KEY';
  const value = env[name];
  if (value === undefined || value.trim() === '') {
    throw new BadArgumentError(
      `the environment variable ${name} is not set or empty: it must hold the API key (for a server without keys, set it to any word, e.g. EMPTY)`,
      { field: 'apiKeyEnv' },
    );
  }
  return checkKey(value.trim(), 'apiKeyEnv');
}

async function readKeyFile(file: string): Promise<string> {
  const fail = (why: string, cause?: unknown): never => {
    throw new BadArgumentError(`the API key file ${file} ${why}`, {
      field: 'apiKeyFile',
      ...(cause === undefined ? {} : { cause }),
    });
  };
  // The key file is the operator's own (a mounted secret is often a symlink): its target is
  // what must be private, so the link is resolved and the target opened without following.
  let target = file;
  try {
    target = await fs.realpath(file);
  } catch (error) {
    fail('cannot be resolved (missing or unreachable)', error);
  }
  let handle: fs.FileHandle | undefined;
  try {
    // O_NONBLOCK: a FIFO planted at the path cannot hang the harness on open.
    handle = await fs.open(target, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    fail('cannot be opened', error);
  }
  try {
    const stat = await handle!.stat();
    if (!stat.isFile()) fail('is not a regular file');
    const uid = process.getuid?.();
    if (uid !== undefined && stat.uid !== uid) {
      fail(`is owned by uid ${stat.uid}, not by this process's user (uid ${uid}): chown it`);
    }
    if ((stat.mode & 0o077) !== 0) {
      fail(
        `is readable or writable by group or others (mode ${(stat.mode & 0o777).toString(8).padStart(4, '0')}): chmod 600 it`,
      );
    }
    if (stat.size > MAX_KEY_FILE_BYTES) fail(`is larger than ${MAX_KEY_FILE_BYTES} bytes`);
    const buffer = Buffer.alloc(MAX_KEY_FILE_BYTES + 1);
    const { bytesRead } = await handle!.read(buffer, 0, buffer.length, 0);
    if (bytesRead > MAX_KEY_FILE_BYTES) fail(`is larger than ${MAX_KEY_FILE_BYTES} bytes`);
    const text = buffer.subarray(0, bytesRead).toString('utf8').trim();
    if (text === '') fail('is empty');
    return text;
  } finally {
    await handle!.close();
  }
}

function checkKey(key: string, field: 'apiKeyEnv' | 'apiKeyFile'): string {
  // It goes into an Authorization header: one token of printable ASCII, or it is refused
  // (without being quoted: the message must not carry the key).
  if (!/^[\x21-\x7e]+$/.test(key) || key.length > 8192) {
    throw new BadArgumentError(
      `the API key (from ${field}) is not one token of printable ASCII characters of at most 8192`,
      { field },
    );
  }
  return key;
}
