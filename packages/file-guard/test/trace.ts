// Test-only: record what a piece of code opened and read through node:fs, to prove that
// nothing outside a root was opened and that a canary secret never reached memory.
import fs from 'node:fs';
import { vi } from 'vitest';

export interface Trace {
  /** Kernel paths (readlink /proc/self/fd/N) of every descriptor opened with fs.openSync. */
  readonly opened: string[];
  /** True once any read returned bytes containing the canary. */
  readonly sawCanary: () => boolean;
  readonly stop: () => void;
}

export function traceFs(canary: string): Trace {
  const opened: string[] = [];
  let seen = false;
  const needle = Buffer.from(canary);
  const realOpenSync = fs.openSync.bind(fs);
  const realReadSync = fs.readSync.bind(fs);
  const realRead = fs.read.bind(fs);
  const spies = [
    vi.spyOn(fs, 'openSync').mockImplementation((...args: Parameters<typeof fs.openSync>) => {
      const fd = realOpenSync(...args);
      try {
        opened.push(fs.readlinkSync(`/proc/self/fd/${fd}`));
      } catch {
        opened.push(`<unreadable fd ${fd}>`);
      }
      return fd;
    }),
    vi.spyOn(fs, 'readSync').mockImplementation(((
      fd: number,
      buffer: NodeJS.ArrayBufferView,
      ...rest: unknown[]
    ) => {
      const n = (realReadSync as (...a: unknown[]) => number)(fd, buffer, ...rest);
      // Only the bytes this read produced (the rest of a reused buffer is stale memory).
      const offset = typeof rest[0] === 'number' ? rest[0] : 0;
      if (Buffer.from(buffer.buffer, buffer.byteOffset + offset, n).includes(needle)) seen = true;
      return n;
    }) as typeof fs.readSync),
    vi.spyOn(fs, 'read').mockImplementation(((...args: unknown[]) => {
      const callback = args[args.length - 1] as (error: unknown, bytesRead: number, buffer: Buffer) => void;
      const offset = typeof args[2] === 'number' ? args[2] : 0;
      const forwarded = [
        ...args.slice(0, -1),
        (error: unknown, bytesRead: number, buffer: Buffer) => {
          if (
            !error &&
            Buffer.isBuffer(buffer) &&
            buffer.subarray(offset, offset + bytesRead).includes(needle)
          ) {
            seen = true;
          }
          callback(error, bytesRead, buffer);
        },
      ];
      (realRead as (...a: unknown[]) => void)(...forwarded);
    }) as unknown as typeof fs.read),
  ];
  return {
    opened,
    sawCanary: () => seen,
    stop: () => {
      for (const spy of spies) spy.mockRestore();
    },
  };
}

/** True when `real` is `root` or below it. */
export function inside(real: string, root: string): boolean {
  return real === root || real.startsWith(`${root}/`);
}
