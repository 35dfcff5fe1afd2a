import { spawn } from 'node:child_process';
import { childrenOf } from '../procfs.js';
import { ROOT_ENV, type World } from './world.js';

/** What one short-lived student process inside the sandbox produced. */
export interface InsideOutput {
  readonly stdout: Buffer;
  readonly stderr: string;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
  /** stdout went past `maxStdoutBytes`; the process was killed. */
  readonly overflow: boolean;
}

export interface InsideOptions {
  readonly world: World;
  readonly uid: number;
  /** argv of the program, run as the student in the sandbox (after env -i). */
  readonly program: readonly string[];
  readonly stdin: Buffer | string;
  readonly timeoutMs: number;
  readonly maxStdoutBytes: number;
  readonly abortSignal?: AbortSignal | undefined;
}

/**
 * Run one program as the student inside the sandbox's namespaces (and cgroup), feed it
 * `stdin`, and collect bounded output. On timeout, overflow or abort both the program inside
 * and nsenter outside are killed (killing nsenter alone would orphan the program inside).
 */
export function runInside(options: InsideOptions): Promise<InsideOutput> {
  const [file, ...args] = options.world.launchArgv(options.uid, 2, options.program);
  return new Promise((resolve) => {
    const child = spawn(file!, args, { env: ROOT_ENV, stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let timedOut = false;
    let overflow = false;
    let settled = false;
    let fallback: NodeJS.Timeout | undefined;
    const kill = (): void => {
      let inside = 0;
      if (child.pid !== undefined) {
        for (const pid of childrenOf(child.pid)) {
          try {
            process.kill(pid, 'SIGKILL');
            inside += 1;
          } catch {
            // gone
          }
        }
      }
      // nsenter reaps what it started and exits; killed at once it would leave a zombie in the
      // namespace for the host's init. It is killed only if it does not go by itself.
      if (inside === 0) child.kill('SIGKILL');
      else fallback ??= setTimeout(() => child.kill('SIGKILL'), 1000);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, options.timeoutMs);
    const onAbort = (): void => {
      kill();
    };
    options.abortSignal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      if (overflow) return;
      size += chunk.length;
      if (size > options.maxStdoutBytes) {
        overflow = true;
        kill();
        return;
      }
      chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 16_384) stderr += chunk.toString('utf8');
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin);
    const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(fallback);
      options.abortSignal?.removeEventListener('abort', onAbort);
      resolve({ stdout: Buffer.concat(chunks), stderr, exitCode: code, signal, timedOut, overflow });
    };
    child.on('error', () => {
      finish(null, null);
    });
    child.on('close', finish);
  });
}
