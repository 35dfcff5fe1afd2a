import { execFile } from 'node:child_process';
import { toSystemError } from '@karotte/base';

/** True when `child` is `parent` or below it (plain path prefix on `/` boundaries). */
export function isWithin(child: string, parent: string): boolean {
  if (parent === '/') return true;
  return child === parent || child.startsWith(`${parent}/`);
}

/** Run a trusted binary with fixed argv, bounded in time; throws a SystemError on failure. */
export function runTrusted(file: string, args: readonly string[], timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, killSignal: 'SIGKILL', env: {} }, (error, _stdout, stderr) => {
      if (error === null) resolve();
      else
        reject(
          toSystemError(
            Object.assign(error, { message: `${error.message} ${stderr}`.trim() }),
            `${file} ${args.join(' ')}`,
          ),
        );
    });
  });
}
