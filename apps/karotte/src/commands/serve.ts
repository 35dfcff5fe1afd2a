import fs from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { KarotteError } from '@karotte/base';
import { recoverLeftovers } from '@karotte/core';
import { createEnvironmentServer, ServerError, type ListenTarget } from '@karotte/server';
import type { Command } from './command.js';
import { parseFlags, UsageError } from '../args.js';
import { EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { APP_DIR } from '../app-world.js';
import { listenForTermination } from '../signals.js';

/** The largest token file read, in bytes. */
const MAX_TOKEN_FILE_BYTES = 4096;

export const serveCommand: Command = {
  help: [
    'Usage: karotte serve --tasks <dir> [--listen 127.0.0.1:<port> | --socket <path>] --token-file <file>',
    '                     [--max-episodes <n>] [--idle-timeout-ms <n>] [--warm-pool <w>]',
    '',
    'Serves the tasks in <dir> (each a task directory, named by its id) as defended episodes over',
    'HTTP (contract section 9; the whole protocol is in GET /v1/openapi.json). Every request needs',
    "Authorization: Bearer <token>, the token file's content (a trailing newline is ignored).",
    '--listen takes a loopback address only (default 127.0.0.1:0, a free port); --socket listens on',
    'a unix socket made mode 0600 instead. Prints "listening on <address>" once requests are',
    'accepted. --max-episodes (default 8) episodes live at once; past it a create is a 503 with',
    'Retry-After. An episode untouched for --idle-timeout-ms (default 600000) is cancelled and torn',
    'down. --warm-pool keeps <w> sandboxes of each task made and verified ahead of its episodes',
    "(0-64, default 0; each is fresh and used once, and holds a uid and the host's admission",
    'reservation of an episode, for up to 4 tasks at once). As root, what an earlier server killed with',
    'SIGKILL left behind (sandboxes, cgroups, mounts) is reclaimed before listening. SIGTERM or',
    'SIGINT stops accepting, cancels every live episode, tears its sandbox down (and the unused',
    'warm ones) and exits 0.',
    '',
    'The same server speaks OpenEnv and MCP (contract section 15): an OpenEnv client given the base',
    'URL http://<address>/openenv/<token> drives one episode per WebSocket (reset with a taskId and',
    'a seed, step with an assistant message, state, close), and /v1/episodes/<id>/mcp is the MCP',
    "server (Streamable HTTP, the same bearer token) of that episode's tools.",
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(
      argv,
      {
        tasks: { type: 'string' },
        listen: { type: 'string' },
        socket: { type: 'string' },
        'token-file': { type: 'string' },
        'max-episodes': { type: 'string' },
        'idle-timeout-ms': { type: 'string' },
        'warm-pool': { type: 'string' },
      },
      ['tasks', 'token-file'],
    );
    if (flags.listen !== undefined && flags.socket !== undefined)
      throw new UsageError('--listen and --socket contradict each other: give at most one');
    const target = listenTarget(flags.listen, flags.socket);
    const maxEpisodes = positiveInteger('max-episodes', flags['max-episodes'], 1, 4096);
    const idleTimeoutMs = positiveInteger('idle-timeout-ms', flags['idle-timeout-ms'], 100, 86_400_000);
    const warmPool =
      flags['warm-pool'] === undefined ? undefined : integer('warm-pool', flags['warm-pool'], 0, 64);
    const tokenFile = path.resolve(flags['token-file']!);
    const token = await readToken(tokenFile);
    const tasksDir = path.resolve(flags.tasks!);
    let server;
    try {
      server = await createEnvironmentServer({
        tasksDir,
        token,
        ...(maxEpisodes === undefined ? {} : { maxEpisodes }),
        ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }),
        ...(warmPool === undefined ? {} : { warmPool }),
        // The app's own directory (answer keys of the examples) and the token stay out of reach.
        hiddenPaths: [APP_DIR, tokenFile],
      });
    } catch (error) {
      if (ServerError.isInstance(error) && error.kind === 'bad_argument') {
        io.stderr.write(
          `karotte serve: ${error.code === 'INVALID_TASKS' ? 'invalid tasks' : 'invalid options'}: ${error.message}\n`,
        );
        return EXIT_USAGE;
      }
      throw error;
    }
    const stopped = new Promise<NodeJS.Signals>((resolve) => {
      const termination = listenForTermination((signal) => {
        termination.dispose();
        resolve(signal);
      });
    });
    try {
      if (process.getuid?.() === 0) {
        // A server killed with SIGKILL left its sandboxes: reclaim them before serving again.
        const report = await recoverLeftovers();
        if (report.sandboxes.length > 0)
          io.stderr.write(
            `karotte serve: reclaimed ${report.sandboxes.length} sandbox(es) a dead harness left (uids ${report.sandboxes.join(', ')})\n`,
          );
      }
      const address = await server.listen(target);
      io.stdout.write(`listening on ${address}\n`);
      const signal = await stopped;
      io.stderr.write(`karotte serve: ${signal}: stopping, tearing every live episode down\n`);
    } finally {
      await server.close();
    }
    return EXIT_OK;
  },
};

function listenTarget(listen: string | undefined, socket: string | undefined): ListenTarget {
  if (socket !== undefined) {
    if (socket === '') throw new UsageError('flag --socket needs a value');
    return { socket: path.resolve(socket) };
  }
  const text = listen ?? '127.0.0.1:0';
  const match = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d{1,5})$/.exec(text);
  const port = match === null ? NaN : Number(match[2]);
  if (match === null || port > 65_535)
    throw new UsageError(`--listen must be <host>:<port>, e.g. 127.0.0.1:8080 (got ${JSON.stringify(text)})`);
  const host = match[1]!.replace(/^\[(.*)\]$/, '$1');
  if (!(host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)))
    throw new UsageError(
      `--listen ${text}: the server listens on loopback only (127.0.0.1, ::1) or a unix socket (--socket)`,
    );
  return { host, port };
}

function positiveInteger(
  flag: string,
  value: string | undefined,
  min: number,
  max: number,
): number | undefined {
  return value === undefined ? undefined : integer(flag, value, min, max);
}

function integer(flag: string, value: string, min: number, max: number): number {
  if (!/^\d{1,10}$/.test(value) || Number(value) < min || Number(value) > max)
    throw new UsageError(`--${flag} must be an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
  return Number(value);
}

async function readToken(file: string): Promise<string> {
  let text: string;
  try {
    const handle = await fs.open(file, 'r');
    try {
      const buffer = Buffer.alloc(MAX_TOKEN_FILE_BYTES + 1);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      if (bytesRead > MAX_TOKEN_FILE_BYTES)
        throw new UsageError(`--token-file ${file} is larger than ${MAX_TOKEN_FILE_BYTES} bytes`);
      text = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const code = KarotteError.isInstance(error) ? error.code : (error as { code?: unknown }).code;
    throw new UsageError(
      `--token-file ${file} cannot be read (${typeof code === 'string' ? code : String(error)})`,
    );
  }
  const token = text.replace(/\r?\n$/, '');
  if (token === '' || /[\r\n]/.test(token))
    throw new UsageError(`--token-file ${file} must hold one non-empty line (the token)`);
  return token;
}
