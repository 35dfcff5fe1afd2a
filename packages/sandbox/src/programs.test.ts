// The programs the sandbox runs are real files (src/programs/), inlined at build time: the
// imported text is the file's, byte for byte, and the program that runs each one parses it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { resolveTrustedBinary } from '@karotte/base';
import { describe, expect, it } from 'vitest';
import { NETWORK_PROBE_SCRIPT } from './network.js';
import fileToolScript from './programs/file-tool.cjs?raw';
import {
  DEV_PROGRAM,
  INIT_SCRIPT,
  LAUNCH_SCRIPT,
  MOUNT_PROGRAM,
  SECCOMP_LOADER,
  SETUP_SCRIPT,
} from './confinement/scripts.js';
import { SYSCALL_PROBE } from './check.js';
import { SHELL_BOOT, SHELL_SCRIPT } from './shell-script.js';

const programs = [
  { file: 'setup.sh', text: SETUP_SCRIPT, check: [resolveTrustedBinary('bash'), '-n'] },
  { file: 'init.sh', text: INIT_SCRIPT, check: [resolveTrustedBinary('sh'), '-n'] },
  { file: 'launch.sh', text: LAUNCH_SCRIPT, check: [resolveTrustedBinary('bash'), '-n'] },
  { file: 'shell.sh', text: SHELL_SCRIPT, check: [resolveTrustedBinary('bash'), '-n'] },
  { file: 'shell-boot.sh', text: SHELL_BOOT, check: [resolveTrustedBinary('bash'), '-n'] },
  { file: 'network-probe.sh', text: NETWORK_PROBE_SCRIPT, check: [resolveTrustedBinary('bash'), '-n'] },
  {
    file: 'seccomp.pl',
    text: SECCOMP_LOADER,
    check: [resolveTrustedBinary('perl'), '-c', '-'],
    stderr: '- syntax OK\n',
  },
  {
    file: 'dev.pl',
    text: DEV_PROGRAM,
    check: [resolveTrustedBinary('perl'), '-c', '-'],
    stderr: '- syntax OK\n',
  },
  {
    file: 'mount.pl',
    text: MOUNT_PROGRAM,
    check: [resolveTrustedBinary('perl'), '-c', '-'],
    stderr: '- syntax OK\n',
  },
  {
    file: 'syscall-probe.pl',
    text: SYSCALL_PROBE,
    check: [resolveTrustedBinary('perl'), '-c', '-'],
    stderr: '- syntax OK\n',
  },
  // `node -e` runs it as CommonJS: a module-syntax check of the same text.
  { file: 'file-tool.cjs', text: fileToolScript, check: [process.execPath, '--check', '-'] },
];

describe('programs', () => {
  it.each(programs)('$file is imported as it is and parses', ({ file, text, check, stderr }) => {
    expect(text).toBe(fs.readFileSync(new URL(`programs/${file}`, import.meta.url), 'utf8'));
    const [command, ...args] = check;
    const result = spawnSync(command!, args, { input: text, encoding: 'utf8' });
    expect(result.stderr).toBe(stderr ?? '');
    expect(result.status).toBe(0);
  });
});
