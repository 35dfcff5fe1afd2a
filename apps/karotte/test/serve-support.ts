// Start `karotte serve` (the built CLI) as a user does, wait for its "listening on" line, and
// stop it by pid with a bound. Shared by the serve tests (Node.js client, Python client, load).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_SANDBOX_STATE_DIR, listLeases } from '@karotte/sandbox';
import { createEnvironmentClient, type EnvironmentClient } from '@karotte/server';
import { pidsOfUid } from '../../../test/support/index.js';
import type { Attack } from '../src/redteam/attack.js';
import { ATTACKS } from '../src/redteam/catalog.js';

const app = path.resolve(import.meta.dirname, '..');
const cli = path.join(app, 'dist', 'cli.js');
export const examples = path.join(app, 'examples');

export interface Served {
  readonly child: ChildProcess;
  readonly pid: number;
  /** `127.0.0.1:<port>` or the socket path, as printed. */
  readonly address: string;
  readonly token: string;
  readonly tokenFile: string;
  readonly dir: string;
  stderr(): string;
  client(options?: { maxRetries?: number }): EnvironmentClient;
  /** SIGTERM, then the exit code (SIGKILL after `timeoutMs`, and the test fails on it). */
  stop(timeoutMs?: number): Promise<number | null>;
}

/** `karotte serve --tasks <tasks> --token-file <fresh> ...extra`; resolves once it listens. */
export async function startServe(
  extra: readonly string[] = [],
  options: { tasks?: string; env?: NodeJS.ProcessEnv; listen?: boolean } = {},
): Promise<Served> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-serve-test-'));
  const token = `karotte-test-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  const tokenFile = path.join(dir, 'token');
  fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  // The two examples the tests solve, by symlink: the app's examples directory grows.
  let tasks = options.tasks;
  if (tasks === undefined) {
    tasks = path.join(dir, 'tasks');
    fs.mkdirSync(tasks);
    for (const name of ['quarterly-revenue', 'roman-numerals'])
      fs.symlinkSync(path.join(examples, name), path.join(tasks, name));
  }
  const listen = options.listen === false || extra.includes('--socket') ? [] : ['--listen', '127.0.0.1:0'];
  const child = spawn(
    process.execPath,
    [cli, 'serve', '--tasks', tasks, '--token-file', tokenFile, ...listen, ...extra],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin', ...options.env } },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`karotte serve did not listen within 60 s: ${stderr}`)),
      60_000,
    );
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
      const match = /^listening on (.+)$/m.exec(stdout);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`karotte serve exited ${code} before listening: ${stderr}`));
    });
  });
  const socket = address.startsWith('/');
  return {
    child,
    pid: child.pid!,
    address,
    token,
    tokenFile,
    dir,
    stderr: () => stderr,
    client: (o = {}) =>
      createEnvironmentClient({
        token,
        ...(socket ? { socketPath: address } : { baseUrl: `http://${address}` }),
        ...o,
      }),
    async stop(timeoutMs = 60_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      fs.rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
}

export { bashMessage, replayOf } from '../../../test/support/index.js';

/** The catalog's classes every client replays through the protocol (the "answer-key and network"). */
const PROTOCOL_CLASSES = new Set(['answer-key-theft', 'network']);

/** Every attack of those classes that runs on a JavaScript task with nothing extra installed. */
export function protocolAttacks(): Attack[] {
  return ATTACKS.filter(
    (attack) =>
      PROTOCOL_CLASSES.has(attack.class) &&
      attack.requires === undefined &&
      (attack.languages.includes('any') || attack.languages.includes('javascript')),
  );
}

/**
 * `roman-small` in `tasksDir`: roman-numerals with 64 pids. Eight sandboxes of 256 pids x 1024
 * files do not fit this host's admission ledger (80 % of fs.file-max) at once, and a group of
 * 8 is built at once.
 */
export function writeSmallRomanTask(tasksDir: string): string {
  const dir = path.join(tasksDir, 'roman-small');
  fs.cpSync(path.join(examples, 'roman-numerals'), dir, { recursive: true });
  const taskFile = path.join(dir, 'task.json');
  // eslint-disable-next-line no-restricted-syntax -- trusted input: the example's own task.json
  const task = JSON.parse(fs.readFileSync(taskFile, 'utf8')) as { id: string; limits: { pids: number } };
  task.id = 'roman-small';
  task.limits.pids = 64;
  fs.writeFileSync(taskFile, JSON.stringify(task));
  return 'roman-small';
}

/** What a student uid left on the host: processes and its identity lease. */
export function leftoversOfUid(uid: number): string[] {
  const found: string[] = [];
  if (pidsOfUid(uid).length > 0) found.push(`processes of uid ${uid}`);
  if (listLeases(DEFAULT_SANDBOX_STATE_DIR).some((lease) => lease.uid === uid))
    found.push(`the lease of uid ${uid}`);
  return found;
}

/** The state directories of servers (`karotte-serve-*` under the temporary directory): a SIGKILLed one leaves its own. */
export function serverStateDirs(): string[] {
  return fs
    .readdirSync(os.tmpdir())
    .filter((name) => /^karotte-serve-[A-Za-z0-9]{6}$/.test(name))
    .map((name) => path.join(os.tmpdir(), name));
}

/** Every lease alive now (uids of live sandboxes on the host). */
export function leasedUids(): number[] {
  return listLeases(DEFAULT_SANDBOX_STATE_DIR).map((lease) => lease.uid);
}
