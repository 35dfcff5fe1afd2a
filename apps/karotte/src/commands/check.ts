import { checkHost } from '@karotte/core';
import type { Command } from '../commands.js';
import { listenForTermination } from '../signals.js';
import { parseFlags } from '../args.js';
import { EXIT_FAILURE, EXIT_OK } from '../exit-codes.js';
import { formatDuration, table } from '../format.js';

export const checkCommand: Command = {
  summary: 'show each defense this host can give and how it is enforced',
  help: [
    'Usage: karotte check [--json]',
    '',
    'Builds a small real sandbox and probes every defense: user separation, namespaces,',
    'memory, process and disk limits, network isolation and reaping. Each is `prevented`',
    '(the kernel enforces it), `detected_and_reaped` (a watchdog kills after the fact) or',
    '`not_supported`. Exit 0 when the kernel enforces every defense, 1 otherwise. Needs root.',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(argv, { json: { type: 'boolean' } });
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
    io.stdout.write(
      `${table(
        ['defense', 'enforcement', 'mechanism', 'evidence'],
        report.defenses.map((d) => [
          d.name.replaceAll('_', ' '),
          d.contract,
          d.mechanism,
          d.reason.slice(0, 100),
        ]),
      )}\n\n`,
    );
    if (report.ok) {
      io.stdout.write(
        `Every defense is enforced by the kernel on this host (checked in ${formatDuration(report.durationMs)}).\n`,
      );
    } else {
      const weak = report.defenses.filter((d) => d.contract !== 'prevented' && d.name !== 'rootless_tier');
      io.stdout.write(
        `${weak.length} defense(s) are weaker or missing on this host: ${weak.map((d) => d.name).join(', ')}.\n`,
      );
      if (!report.root)
        io.stdout.write(
          'Run karotte as root: the sandbox needs root for users, namespaces, cgroups and mounts.\n',
        );
    }
    return report.ok ? EXIT_OK : EXIT_FAILURE;
  },
};
