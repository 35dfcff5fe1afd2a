// Test-only helpers: run code as an unprivileged student uid (setpriv, the harness's node).
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

const SETPRIV = '/usr/bin/setpriv';

function argv(uid: number, script: string, args: readonly string[]): string[] {
  return [
    '--reuid',
    String(uid),
    '--regid',
    String(uid),
    '--clear-groups',
    '--',
    process.execPath,
    '-e',
    script,
    ...args.map((arg) => `karotte-arg:${arg}`),
  ];
}

/** Prelude for student scripts: `args` holds the arguments without their prefix. */
const PRELUDE = `const fs = require('node:fs'); const path = require('node:path'); const args = process.argv.slice(1).map((a) => a.slice('karotte-arg:'.length));\n`;

/** Run `script` (CommonJS, with fs/path/args in scope) as `uid`, synchronously; throws on failure. */
export function asStudent(uid: number, script: string, args: readonly string[] = [], cwd = '/'): string {
  const result = spawnSync(SETPRIV, argv(uid, PRELUDE + script, args), {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
    env: {},
  });
  if (result.status !== 0) {
    throw new Error(
      `student script failed (${String(result.status)} ${String(result.signal)}): ${result.stderr}`,
    );
  }
  return result.stdout;
}

/** Start `script` as `uid` in the background (for racing helpers); kill it by pid. */
export function startStudent(
  uid: number,
  script: string,
  args: readonly string[] = [],
  cwd = '/',
): ChildProcess {
  return spawn(SETPRIV, argv(uid, PRELUDE + script, args), {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {},
  });
}

/** Run a trusted system binary as root, throwing on failure. */
export function run(binary: string, args: readonly string[]): string {
  const result = spawnSync(binary, args, { encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) {
    throw new Error(`${binary} ${args.join(' ')} failed: ${result.stderr}`);
  }
  return result.stdout;
}
