// The PID-1 shim (initArgv) as the real first process of a fresh PID namespace: exit-status
// mapping, reaping of orphans (against a control PID 1 that never reaps), signal forwarding.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../../../test/support/index.js';
import { initArgv } from './index.js';

const UNSHARE = '/usr/bin/unshare';
const cleanups: (() => void)[] = [];
const started: number[] = [];

afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL'); // unshare --fork: its child (the namespace init) dies with the namespace's parent kill below
    } catch {
      // exited
    }
  }
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function runInNamespace(command: string[]): { status: number | null; stdout: string } {
  const result = spawnSync(UNSHARE, ['--pid', '--fork', '--mount-proc', '--', ...initArgv(command)], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: result.status, stdout: result.stdout };
}

/** The pid (in our namespace) of the first child of `parent`. */
function childOf(parent: number): number | undefined {
  try {
    const text = fs.readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim();
    return text === '' ? undefined : Number(text.split(/\s+/)[0]);
  } catch {
    return undefined;
  }
}

function waitExit(child: ReturnType<typeof spawn>): Promise<number | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, 20_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/**
 * Run inside the namespace: six orphans (a subshell starts a short sleep and exits, so the sleep
 * is reparented to PID 1). Wait (bounded) until every one has exited, then, when `$1` is
 * `reaped`, until none is a zombie any more; print how many are still running and how many are
 * zombies. Waits on the kernel's states, not on a fixed delay: on a loaded machine the sleeps
 * may take long to end, and PID 1 a moment to reap.
 */
const COUNT_ZOMBIES = [
  'pids=; for i in 1 2 3 4 5 6; do pids="$pids $( ( /bin/sleep 0.1 >/dev/null & echo $! ) )"; done',
  'count() {',
  '  running=0; zombies=0',
  '  for p in $pids; do',
  '    { read -r line < "/proc/$p/stat"; } 2>/dev/null || continue',
  '    case "${line##*) }" in Z*) zombies=$((zombies+1));; *) running=$((running+1));; esac',
  '  done',
  '}',
  'n=0; count; while [ "$running" -gt 0 ] && [ "$n" -lt 400 ]; do /bin/sleep 0.05; n=$((n+1)); count; done',
  'if [ "$1" = reaped ]; then',
  '  n=0; while [ "$zombies" -gt 0 ] && [ "$n" -lt 200 ]; do /bin/sleep 0.05; n=$((n+1)); count; done',
  'fi',
  'echo "running=$running zombies=$zombies"',
].join('\n');

describe('initArgv(): PID 1 of a namespace', () => {
  it('exits with the command status, and 128 + n when signal n killed it', () => {
    expect(runInNamespace(['/bin/sh', '-c', 'exit 0']).status).toBe(0);
    expect(runInNamespace(['/bin/sh', '-c', 'exit 7']).status).toBe(7);
    expect(runInNamespace(['/bin/sh', '-c', 'exit 200']).status).toBe(200);
    expect(runInNamespace(['/bin/sh', '-c', 'kill -TERM $$']).status).toBe(143);
    expect(runInNamespace(['/bin/sh', '-c', 'kill -KILL $$']).status).toBe(137);
  });

  it('reaps reparented orphans, where a PID 1 that never waits collects zombies (control)', async () => {
    const counts: Record<string, { running: number; zombies: number }> = {};
    for (const [label, pid1] of [
      ['init', initArgv(['/bin/sleep', '30'])],
      ['control', ['/bin/sleep', '30']],
    ] as const) {
      const ns = spawn(UNSHARE, ['--pid', '--fork', '--mount-proc', '--', ...pid1], { stdio: 'ignore' });
      started.push(ns.pid!);
      let init: number | undefined;
      await waitFor(() => (init = childOf(ns.pid!)) !== undefined);
      // Until it execs, the child is still `unshare` (whose argv names sleep too), and it may not
      // have mounted the namespace's /proc yet: wait for the exec, which comes after the mount.
      await waitFor(() => {
        try {
          return fs.readFileSync(`/proc/${init}/comm`, 'utf8').trim() !== 'unshare';
        } catch {
          return false;
        }
      });
      // Orphans made by a process that joined the namespace: they are reparented to its PID 1.
      const result = spawnSync(
        '/usr/bin/nsenter',
        [
          '-t',
          String(init),
          '--pid',
          '--mount',
          '--',
          '/bin/bash',
          '-c',
          COUNT_ZOMBIES,
          'count',
          label === 'init' ? 'reaped' : 'kept',
        ],
        { encoding: 'utf8', timeout: 60_000 },
      );
      const parsed = /running=(\d+) zombies=(\d+)/.exec(result.stdout);
      counts[label] = { running: Number(parsed?.[1] ?? -1), zombies: Number(parsed?.[2] ?? -1) };
      ns.kill('SIGKILL');
      try {
        process.kill(init!, 'SIGKILL');
      } catch {
        // gone
      }
    }
    // Every orphan ended; PID 1 that never waits keeps all six as zombies, the shim none.
    expect(counts['control']).toEqual({ running: 0, zombies: 6 });
    expect(counts['init']).toEqual({ running: 0, zombies: 0 });
  });

  it('forwards TERM, INT and USR1 to the command and exits with what the command did', async () => {
    const { dir, cleanup } = tempDir('init');
    cleanups.push(cleanup);
    for (const [signal, script, expected] of [
      ['SIGTERM', 'trap "exit 42" TERM', 42],
      ['SIGUSR1', 'trap "exit 10" USR1', 10],
      ['SIGINT', ':', 130],
    ] as const) {
      const ready = `${dir}/ready-${signal}`;
      const ns = spawn(
        UNSHARE,
        [
          '--pid',
          '--fork',
          '--',
          ...initArgv(['/bin/bash', '-c', `${script}; : > "$1"; /bin/sleep 20 & wait`, 'cmd', ready]),
        ],
        { stdio: 'ignore' },
      );
      started.push(ns.pid!);
      const exited = waitExit(ns);
      await waitFor(() => fs.existsSync(ready));
      const init = childOf(ns.pid!);
      expect(init).toBeDefined();
      process.kill(init!, signal);
      expect(await exited).toBe(expected);
    }
  });
});
