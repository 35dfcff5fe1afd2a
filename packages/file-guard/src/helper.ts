// Running the as-uid helper: the harness's own node, started as the target uid by a trusted
// binary, with a clean environment, bounded output and a kill deadline.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { resolveTrustedBinary } from '@karotte/base';
import { z } from 'zod';
import { FileGuardError } from './errors.js';
import { HELPER_REQUEST_PREFIX, HELPER_SOURCE } from './helper-source.js';

/** Why an untrusted-path operation did not succeed. Data, never an exception. */
const UNTRUSTED_FAILURE_REASONS = [
  'NOT_FOUND',
  'PERMISSION_DENIED',
  'SYMLINK',
  'NOT_DIRECTORY',
  'IS_DIRECTORY',
  'NOT_REGULAR_FILE',
  'TOO_LARGE',
  'NOT_UTF8',
  'EXISTS',
  'NO_SPACE',
  'READ_ONLY',
  'NAME_TOO_LONG',
  'BUSY',
  'TIMED_OUT',
  'INTERRUPTED',
  'IO_ERROR',
] as const;

export type UntrustedFailureReason = (typeof UNTRUSTED_FAILURE_REASONS)[number];

const MAX_STATUS_BYTES = 64 * 1024;
const MAX_STDERR_BYTES = 16 * 1024;

const idsSchema = z.object({ uid: z.number(), gid: z.number(), groups: z.array(z.number()) }).strict();

/** The helper's status object (fd 3). Parsed strictly: the helper may have been tampered with. */
export const helperStatusSchema = z.union([
  z
    .object({
      ids: idsSchema,
      ok: z.literal(false),
      reason: z.enum([...UNTRUSTED_FAILURE_REASONS, 'PROC_UNAVAILABLE']),
      message: z.string().max(1000),
      size: z.number().optional(),
      component: z.number().optional(),
    })
    .strict(),
  z
    .object({
      ids: idsSchema,
      ok: z.literal(true),
      size: z.number().optional(),
      bytes: z.number().optional(),
      truncated: z.boolean().optional(),
      bytesWritten: z.number().optional(),
      created: z.boolean().optional(),
      count: z.number().optional(),
      type: z.string().optional(),
      mode: z.number().optional(),
      uid: z.number().optional(),
      gid: z.number().optional(),
      nlink: z.number().optional(),
      mtimeMs: z.number().optional(),
    })
    .strict(),
]);

type HelperStatus = z.infer<typeof helperStatusSchema>;

export interface HelperRequest {
  readonly op: 'read' | 'write' | 'list' | 'stat';
  readonly path: Buffer;
  readonly follow: boolean;
  readonly [key: string]: unknown;
}

export interface HelperRun {
  readonly asUid: number;
  readonly asGid: number;
  readonly mountNamespace: string | undefined;
  readonly timeoutMs: number;
  readonly abortSignal: AbortSignal | undefined;
  readonly stdin: Buffer | undefined;
  /** Most stdout bytes accepted; more is a protocol violation (the helper is killed). */
  readonly stdoutCap: number;
}

export type HelperOutcome =
  | { readonly kind: 'status'; readonly status: HelperStatus; readonly stdout: Buffer }
  | { readonly kind: 'failed'; readonly reason: 'TIMED_OUT' | 'INTERRUPTED'; readonly message: string };

/** The argv that runs the helper as the uid: setpriv, or nsenter into a mount namespace. */
function helperArgv(run: HelperRun, request: string): { file: string; args: string[] } {
  const node = trustedNode();
  const nodeArgs = ['--max-old-space-size=128', '-e', HELPER_SOURCE, request];
  if (run.mountNamespace !== undefined) {
    // nsenter switches uid/gid (and clears groups) itself, before exec: no binary ever runs
    // as root inside a namespace whose files the student might control.
    return {
      file: resolveTrustedBinary('nsenter'),
      args: [
        `--mount=${run.mountNamespace}`,
        '--setgid',
        String(run.asGid),
        '--setuid',
        String(run.asUid),
        '--no-fork',
        '--',
        node,
        ...nodeArgs,
      ],
    };
  }
  return {
    file: resolveTrustedBinary('setpriv'),
    args: [
      '--reuid',
      String(run.asUid),
      '--regid',
      String(run.asGid),
      '--clear-groups',
      '--no-new-privs',
      '--',
      node,
      ...nodeArgs,
    ],
  };
}

/** The harness's own node, checked like any trusted binary (root-owned, not writable by others). */
function trustedNode(): string {
  const execPath = process.execPath;
  return resolveTrustedBinary(path.basename(execPath), { dirs: [path.dirname(execPath)] });
}

/**
 * Run one helper request as `run.asUid`. Host faults (a missing setpriv, an untrusted node)
 * throw `HELPER_FAILED`; everything the student could cause (killing or stopping the helper,
 * garbage output) is a `failed` outcome.
 */
export function runHelper(request: HelperRequest, run: HelperRun): Promise<HelperOutcome> {
  const encoded =
    HELPER_REQUEST_PREFIX +
    Buffer.from(JSON.stringify({ ...request, path: request.path.toString('base64') })).toString('base64');
  let argv: { file: string; args: string[] };
  try {
    argv = helperArgv(run, encoded);
  } catch (error) {
    return Promise.reject(
      new FileGuardError('HELPER_FAILED', `cannot start the as-uid helper: ${String(error)}`, {
        cause: error,
      }),
    );
  }
  if (run.abortSignal?.aborted === true) {
    return Promise.reject(
      new FileGuardError('ABORTED', 'the operation was aborted', { cause: run.abortSignal.reason }),
    );
  }
  return new Promise<HelperOutcome>((resolve, reject) => {
    const child = spawn(argv.file, argv.args, {
      cwd: '/',
      env: {},
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    const status: Buffer[] = [];
    let statusBytes = 0;
    let stderr = '';
    let violation: string | undefined;
    let timedOut = false;
    let settled = false;

    const kill = (): void => {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    };
    const finish = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      run.abortSignal?.removeEventListener('abort', onAbort);
      for (const stream of [child.stdin, child.stdout, child.stderr, child.stdio[3]]) stream?.destroy();
      outcome();
    };
    const onAbort = (): void => {
      kill();
      finish(() => {
        reject(
          new FileGuardError('ABORTED', 'the operation was aborted', { cause: run.abortSignal?.reason }),
        );
      });
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, run.timeoutMs);
    run.abortSignal?.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > run.stdoutCap) {
        violation ??= 'the helper wrote more than its bound';
        kill();
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < MAX_STDERR_BYTES) stderr += chunk.toString('utf8').slice(0, MAX_STDERR_BYTES);
    });
    const statusStream = child.stdio[3];
    statusStream?.on('data', (chunk: Buffer) => {
      statusBytes += chunk.length;
      if (statusBytes > MAX_STATUS_BYTES) {
        violation ??= 'the helper wrote an oversized status';
        kill();
        return;
      }
      status.push(chunk);
    });
    for (const stream of [child.stdin, child.stdout, child.stderr, statusStream]) {
      stream?.on('error', () => {
        // EPIPE and friends: the exit handler reports the outcome.
      });
    }
    child.on('error', (error) => {
      finish(() => {
        reject(
          new FileGuardError('HELPER_FAILED', `cannot start the as-uid helper: ${error.message}`, {
            cause: error,
          }),
        );
      });
    });
    // 'close' waits for every holder of the pipes; a process the student forked from a
    // tampered helper could hold them forever, so after 'exit' only a short grace is given.
    let exitGrace: NodeJS.Timeout | undefined;
    child.on('exit', (code, signal) => {
      exitGrace = setTimeout(() => {
        conclude(code, signal);
      }, 500);
    });
    child.on('close', (code, signal) => {
      conclude(code, signal);
    });
    const conclude = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(exitGrace);
      finish(() => {
        if (timedOut) {
          resolve({ kind: 'failed', reason: 'TIMED_OUT', message: `no answer within ${run.timeoutMs} ms` });
          return;
        }
        if (violation !== undefined) {
          resolve({ kind: 'failed', reason: 'INTERRUPTED', message: violation });
          return;
        }
        const raw = Buffer.concat(status).toString('utf8');
        if (raw.length === 0) {
          // setpriv and nsenter fail before the uid switch and exec, where the student cannot
          // reach them: their own failures are host faults. Anything later is the student's.
          if (/^(setpriv|nsenter): /m.test(stderr) && signal === null) {
            reject(new FileGuardError('HELPER_FAILED', `the as-uid helper did not start: ${stderr.trim()}`));
            return;
          }
          resolve({
            kind: 'failed',
            reason: 'INTERRUPTED',
            message: `the helper ended without an answer (${signal ?? `exit ${String(code)}`})`,
          });
          return;
        }
        let parsed: unknown;
        try {
          // eslint-disable-next-line no-restricted-syntax -- bounded (64 KiB) and validated by a strict zod schema below
          parsed = JSON.parse(raw);
        } catch {
          resolve({ kind: 'failed', reason: 'INTERRUPTED', message: 'the helper answered garbage' });
          return;
        }
        const checked = helperStatusSchema.safeParse(parsed);
        if (!checked.success) {
          resolve({
            kind: 'failed',
            reason: 'INTERRUPTED',
            message: 'the helper answered an invalid status',
          });
          return;
        }
        const ids = checked.data.ids;
        if (
          ids.uid !== run.asUid ||
          ids.gid !== run.asGid ||
          ids.groups.some((group) => group !== run.asGid)
        ) {
          resolve({
            kind: 'failed',
            reason: 'INTERRUPTED',
            message: 'the helper did not run as the requested uid',
          });
          return;
        }
        if (!checked.data.ok && checked.data.reason === 'PROC_UNAVAILABLE') {
          reject(new FileGuardError('PROC_UNAVAILABLE', 'the helper found no working /proc/self/fd'));
          return;
        }
        resolve({ kind: 'status', status: checked.data, stdout: Buffer.concat(stdout) });
      });
    };
    if (run.stdin !== undefined) child.stdin.end(run.stdin);
    else child.stdin.end();
  });
}
