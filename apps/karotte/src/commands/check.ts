import process from 'node:process';
import { checkHost, type HostCheck } from '@karotte/core';
import type { Command } from './command.js';
import { listenForTermination } from '../signals.js';
import { parseFlags } from '../args.js';
import { EXIT_FAILURE, EXIT_OK } from '../exit-codes.js';
import { formatDuration, indentWrapped, table, tableTruncates, terminalWidth } from '../format.js';

const HEADER = ['defense', 'enforcement', 'mechanism', 'evidence'] as const;
/** mechanism and evidence share what the terminal has left. */
const FLEXIBLE = [2, 3] as const;

/**
 * The human report of `karotte check` for a terminal `width` wide: the table (mechanism and
 * evidence cut to fit, or wrapped in full with `verbose`), then the verdict, and the full
 * evidence of every defense that is weaker or missing.
 */
export function renderCheck(report: HostCheck, width: number, verbose: boolean): string {
  const rows = report.defenses.map((d) => [d.name.replaceAll('_', ' '), d.contract, d.mechanism, d.reason]);
  const options = { width, flexible: FLEXIBLE, overflow: verbose ? 'wrap' : 'truncate' } as const;
  const out = [table(HEADER, rows, options), ''];
  // Every line after the table fits the width too.
  const say = (text: string, indent = ''): void => {
    out.push(indentWrapped(text, width, indent));
  };
  if (report.ok) {
    say(
      `Every defense is enforced by the kernel on this host (checked in ${formatDuration(report.durationMs)}).`,
    );
  } else {
    const weak = report.defenses.filter((d) => d.contract !== 'prevented' && d.name !== 'rootless_tier');
    say(
      `${weak.length} defense(s) are weaker or missing on this host: ${weak.map((d) => d.name).join(', ')}.`,
    );
    // The evidence of what is missing is what a person acts on: always in full, once per reason
    // (without root every defense has the same one).
    const byReason = new Map<string, string[]>();
    for (const d of weak)
      byReason.set(d.reason, [...(byReason.get(d.reason) ?? []), d.name.replaceAll('_', ' ')]);
    for (const [reason, names] of byReason) {
      say(
        names.length === weak.length && weak.length > 1
          ? `all of them: ${reason}`
          : `${names.join(', ')}: ${reason}`,
        '  ',
      );
    }
    if (!report.root) {
      say('Run karotte as root: the sandbox needs root for users, namespaces, cgroups and mounts.');
    }
  }
  if (tableTruncates(HEADER, rows, options)) {
    say('Cut to fit the terminal: karotte check --verbose shows it all.');
  }
  return `${out.join('\n')}\n`;
}

export const checkCommand: Command = {
  help: [
    'Usage: karotte check [--json] [--verbose]',
    '',
    'Builds a small real sandbox and probes every defense: user separation, namespaces,',
    'memory, process and disk limits, network isolation and reaping, and checks the Node.js',
    'that runs graders (root-owned, no hidden or user-writable directory on its path). Each is',
    '`prevented` (enforced), `detected_and_reaped` (a watchdog kills after the fact) or',
    '`not_supported`. Exit 0 when every defense is enforced, 1 otherwise. Runs as any user;',
    'only root sees every defense.',
    '',
    'The table fits the terminal (80 columns when output is not a terminal, or $COLUMNS);',
    '--verbose wraps mechanism and evidence in full, --json prints the whole report.',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(argv, { json: { type: 'boolean' }, verbose: { type: 'boolean' } });
    const termination = listenForTermination();
    let report;
    try {
      report = await checkHost({ abortSignal: termination.signal });
    } finally {
      termination.dispose();
    }
    if (flags.json === true) {
      io.stdout.write(`${JSON.stringify(report)}\n`);
      return report.ok ? EXIT_OK : EXIT_FAILURE;
    }
    io.stdout.write(renderCheck(report, terminalWidth(io.stdout, process.env), flags.verbose === true));
    return report.ok ? EXIT_OK : EXIT_FAILURE;
  },
};
