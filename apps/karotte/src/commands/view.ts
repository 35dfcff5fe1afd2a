import fs from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BadArgumentError } from '@karotte/base';
import { createViewerServer, isLoopbackHost, renderExportHtml, ViewerError } from '@karotte/viewer';
import type { Command } from './command.js';
import { UsageError } from '../args.js';
import { EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { ATTACKS } from '../redteam/catalog.js';
import { listenForTermination } from '../signals.js';

export const viewCommand: Command = {
  help: [
    'Usage: karotte view <dir>... [--listen 127.0.0.1:<port>]',
    '       karotte view <dir>... --export <file.html>',
    '',
    'Shows the runs found under the given directories (a run is a directory holding result.json',
    'and transcript.jsonl, as `run --out` and `redteam --out` write them; a tree of them is',
    'searched, symbolic links are not followed): the runs table (task, agent, status, score,',
    'misbehavior, reason, turns, duration, time; sorted and filtered), and each run turn by turn',
    'with its tool calls and outputs, the misbehavior refused, and the evidence (verdict, limit',
    'hits, reap record, custody manifest, network proof, timings). Everything from a run is shown',
    'as text, never as markup or script.',
    '--listen takes a loopback address only (default 127.0.0.1:0, a free port) and prints',
    '"listening on <url>"; the server answers only requests for its own address (Host header)',
    'and serves only the page, its script and the runs given. SIGINT or SIGTERM stops it (exit 0).',
    '--export writes one self-contained HTML file (mode 0600) that opens from file:// and makes',
    'no request: the script inlined, system fonts, a strict Content-Security-Policy.',
    'Exit 0 once the file is written or the server was stopped, 2 on invalid arguments (a',
    'directory that is not one, a non-loopback address).',
  ].join('\n'),
  async run(argv, { io }) {
    let values: { listen?: string; export?: string };
    let dirs: string[];
    try {
      const parsed = parseArgs({
        args: [...argv],
        options: { listen: { type: 'string' }, export: { type: 'string' } },
        strict: true,
        allowPositionals: true,
      });
      values = parsed.values;
      dirs = parsed.positionals;
    } catch (error) {
      throw new UsageError(
        (error as Error).message.replace(/^Unknown option '([^']+)'.*$/s, 'unknown flag $1'),
      );
    }
    if (dirs.length === 0) throw new UsageError('give at least one run directory (karotte view <dir>...)');
    if (values.listen !== undefined && values.export !== undefined)
      throw new UsageError('--listen and --export contradict each other: give at most one');
    try {
      if (values.export !== undefined) {
        if (values.export === '') throw new UsageError('flag --export needs a value');
        const file = path.resolve(values.export);
        const { html, runs } = await renderExportHtml({ dirs, attacks: catalogAttacks() });
        try {
          await fs.writeFile(file, html, { mode: 0o600 });
        } catch (error) {
          const code = (error as { code?: unknown }).code;
          throw new UsageError(
            `--export ${file} cannot be written (${typeof code === 'string' ? code : String(error)})`,
          );
        }
        io.stdout.write(`wrote ${file}: ${runs} run${runs === 1 ? '' : 's'}\n`);
        return EXIT_OK;
      }
      const { host, port } = listenAddress(values.listen);
      const server = await createViewerServer({ dirs, host, port, attacks: catalogAttacks() });
      const stopped = new Promise<NodeJS.Signals>((resolve) => {
        const termination = listenForTermination((signal) => {
          termination.dispose();
          resolve(signal);
        });
      });
      try {
        const url = await server.listen();
        io.stdout.write(`listening on ${url}\n`);
        const signal = await stopped;
        io.stderr.write(`karotte view: ${signal}: stopping\n`);
      } finally {
        await server.close();
      }
      return EXIT_OK;
    } catch (error) {
      if (
        (ViewerError.isInstance(error) && error.kind === 'bad_argument') ||
        BadArgumentError.isInstance(error)
      ) {
        io.stderr.write(`karotte view: ${error.message}\n`);
        return EXIT_USAGE;
      }
      throw error;
    }
  },
};

/** The catalog's attacks by id, so a red-team directory's runs show their class and expected outcome. */
function catalogAttacks(): Record<string, { class: string; expected: string[] | null }> {
  return Object.fromEntries(
    ATTACKS.map((a) => [a.id, { class: a.class, expected: a.expected === 'any' ? null : [...a.expected] }]),
  );
}

function listenAddress(listen: string | undefined): { host: string; port: number } {
  const text = listen ?? '127.0.0.1:0';
  const match = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d{1,5})$/.exec(text);
  const port = match === null ? NaN : Number(match[2]);
  if (match === null || port > 65_535)
    throw new UsageError(`--listen must be <host>:<port>, e.g. 127.0.0.1:8080 (got ${JSON.stringify(text)})`);
  const host = match[1]!.replace(/^\[(.*)\]$/, '$1');
  if (!isLoopbackHost(host))
    throw new UsageError(`--listen ${text}: the viewer listens on loopback only (127.0.0.1, ::1, localhost)`);
  return { host, port };
}
