// Shared helpers for the integration tests (real processes, uids, cgroups, mounts).
// Everything a helper creates is named with `karotte` and removed by the returned cleanup,
// on success and on failure.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A uid for one test, unique across test workers: no passwd entry is created (numeric uids
 * work with setpriv and need no cleanup of /etc/passwd). Range 3_900_000_000+.
 */
let counter = 0;
export function testUid(): number {
  counter += 1;
  return 3_900_000_000 + (process.pid % 1_000_000) * 50 + (counter % 50);
}

/** Live (non-zombie) pids whose real uid is `uid`, from a /proc walk. */
export function pidsOfUid(uid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = fs.readFileSync(`/proc/${name}/status`, 'utf8');
      const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      const state = /^State:\s+(\S)/m.exec(status)?.[1];
      if (real === String(uid) && state !== 'Z') out.push(Number(name));
    } catch {
      // vanished
    }
  }
  return out;
}

/**
 * {@link pidsOfUid} without the processes that have SIGKILL pending for the whole process
 * (`ShdPnd` bit 8, the reaper's rule): those never run again, though the kernel may still be
 * tearing them down.
 */
export function runnablePidsOfUid(uid: number): number[] {
  return pidsOfUid(uid).filter((pid) => {
    try {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      const shared = /^ShdPnd:\s+([0-9a-f]+)$/m.exec(status)?.[1];
      return shared === undefined || (BigInt(`0x${shared}`) & (1n << 8n)) === 0n;
    } catch {
      return false; // exited
    }
  });
}

/**
 * Test cleanup of last resort: SIGKILL every process of `uid` (by pid, never by name) until
 * none is left, bounded by `timeoutMs`. Throws when some survive, so a leak fails the test.
 */
export async function killUid(uid: number, timeoutMs = 10_000): Promise<void> {
  if (uid < 1000) throw new Error(`refusing to kill uid ${uid}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const setpriv = '/usr/bin/setpriv';
    spawnSync(setpriv, [
      '--reuid',
      String(uid),
      '--regid',
      String(uid),
      '--clear-groups',
      '/bin/kill',
      '-KILL',
      '-1',
    ]);
    const left = pidsOfUid(uid);
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    if (pidsOfUid(uid).length === 0) return;
    if (Date.now() > deadline) throw new Error(`uid ${uid} still has processes ${pidsOfUid(uid).join(',')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A fresh temporary directory named `karotte-<label>-…`, removed by the returned cleanup. */
export function tempDir(label: string): { dir: string; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `karotte-${label}-`));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** The mount points of this mount namespace below `dir` (not `dir` itself), in table order. */
export function mountsUnder(dir: string): string[] {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mountPoint) => mountPoint.startsWith(`${dir}/`));
}

/**
 * A fresh tmpfs mounted on a temporary directory (`karotte-<label>-…`, source name
 * `karotte-test-<label>`), with mount options `options` (e.g. `size=512m,mode=1777`). The
 * returned cleanup unmounts it and removes the directory.
 */
export function tmpfsDir(label: string, options: string): { dir: string; cleanup: () => void } {
  const { dir, cleanup } = tempDir(label);
  const mounted = spawnSync('/usr/bin/mount', ['-t', 'tmpfs', '-o', options, `karotte-test-${label}`, dir], {
    encoding: 'utf8',
  });
  if (mounted.status !== 0) {
    cleanup();
    throw new Error(`cannot mount a tmpfs on ${dir}: ${mounted.stderr}`);
  }
  return {
    dir,
    cleanup: () => {
      const unmounted = spawnSync('/usr/bin/umount', [dir], { encoding: 'utf8' });
      if (unmounted.status !== 0) throw new Error(`cannot unmount ${dir}: ${unmounted.stderr}`);
      cleanup();
    },
  };
}

/** Wait until `predicate` is true, polling every `intervalMs`, or throw after `timeoutMs`. */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  intervalMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Outcome of a process run by {@link runBounded}. */
export interface BoundedRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly pid: number;
  readonly timedOut: boolean;
}

/**
 * Run argv and wait for it with a bound: past `timeoutMs` the process is SIGKILLed (by pid)
 * and `timedOut` is set. Output is kept up to 1 MiB per stream.
 */
export function runBounded(argv: readonly string[], timeoutMs: number): Promise<BoundedRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' },
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < 1 << 20) stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 1 << 20) stderr += chunk.toString('utf8');
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, pid: child.pid ?? -1, timedOut });
    });
  });
}

/** argv that drops to `uid` (no groups, no new privileges) and runs `command`. */
export function asUid(uid: number, command: readonly string[]): string[] {
  return [
    '/usr/bin/setpriv',
    '--reuid',
    String(uid),
    '--regid',
    String(uid),
    '--clear-groups',
    '--no-new-privs',
    '--',
    ...command,
  ];
}

/**
 * The keyring system calls' numbers on this machine's architecture, for tests that plant
 * kernel keys through perl's `syscall()`. Throws on an architecture it does not know, so such
 * a test fails there instead of skipping.
 */
export function keyringSyscalls(): { addKey: number; keyctl: number } {
  const table: Record<string, { addKey: number; keyctl: number }> = {
    x64: { addKey: 248, keyctl: 250 },
    arm64: { addKey: 217, keyctl: 219 },
  };
  const numbers = table[process.arch];
  if (numbers === undefined)
    throw new Error(`the keyring syscall numbers of ${process.arch} are not known here`);
  return numbers;
}

/** A replay file's assistant messages (the repository's own example files). */
export function replayOf(file: string): Record<string, unknown>[] {
  // eslint-disable-next-line no-restricted-syntax -- trusted input: the repository's own example files
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>[];
}

/** An assistant message with one bash call. */
export function bashMessage(id: string, command: string): Record<string, unknown> {
  return {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } },
    ],
  };
}

const LOADED_PREFIX = 'LOADED ';

/**
 * Node.js arguments that make a process list every module it loads (a `registerHooks` load
 * hook, imported first), printed to stderr as it exits; {@link loadedModules} reads the list.
 */
export const LIST_LOADED_MODULES: readonly string[] = [
  '--import',
  `data:text/javascript,${encodeURIComponent(
    [
      "import { registerHooks } from 'node:module';",
      'const loaded = [];',
      'registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });',
      `process.on('exit', () => process.stderr.write(${JSON.stringify(LOADED_PREFIX)} + JSON.stringify(loaded) + '\\n'));`,
    ].join('\n'),
  )}`,
];

/** The module URLs a process run with {@link LIST_LOADED_MODULES} loaded; throws when it printed none. */
export function loadedModules(stderr: string): string[] {
  const line = stderr.split('\n').find((l) => l.startsWith(LOADED_PREFIX));
  if (line === undefined) throw new Error(`no module list on stderr: ${stderr.slice(-2000)}`);
  return JSON.parse(line.slice(LOADED_PREFIX.length)) as string[];
}
