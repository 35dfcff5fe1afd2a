// Admission across real processes: the ledger's sum never exceeds the capacity, a request that
// does not fit waits for a release, one the host could never give is refused at once, and a
// reservation whose holder was SIGKILLed holds nothing. Capacities are small ones given by the
// test, so nothing here depends on this host's RAM or fs.file-max.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { admit, defaultEpisodeMemoryBytes, hostCapacity } from './admission.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function ledger(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-admission-'));
  fs.chmodSync(dir, 0o700);
  dirs.push(dir);
  return path.join(dir, 'ledger');
}

const capacity = { memoryBytes: 100 * MiB, files: 1000 };

describe('admit', () => {
  it('waits for room, then admits; the sum of live reservations never exceeds the capacity', async () => {
    const dir = ledger();
    const first = await admit({ label: 'a', memoryBytes: 60 * MiB, files: 100, dir, capacity });
    expect(first.waitedMs).toBeLessThan(1000);
    // 60 + 60 MiB > 100 MiB: the second waits until the first is released.
    const started = performance.now();
    const second = admit({ label: 'b', memoryBytes: 60 * MiB, files: 100, dir, capacity, waitMs: 10_000 });
    setTimeout(() => {
      first.release();
    }, 400);
    const admitted = await second;
    expect(performance.now() - started).toBeGreaterThanOrEqual(350);
    expect(admitted.waitedMs).toBeGreaterThanOrEqual(350);
    // The file budget counts too.
    await expect(
      admit({ label: 'c', memoryBytes: MiB, files: 901, dir, capacity, waitMs: 200 }),
    ).rejects.toMatchObject({
      code: 'ADMISSION_TIMEOUT',
      message: expect.stringContaining('100 of 1000 files') as unknown,
    });
    admitted.release();
    expect(fs.readdirSync(dir).filter((name) => name.endsWith('.json'))).toEqual([]);
  });

  it('refuses at once what the whole host could never give, saying what is short', async () => {
    const dir = ledger();
    const started = performance.now();
    await expect(
      admit({ label: 'big', memoryBytes: 200 * MiB, files: 1, dir, capacity }),
    ).rejects.toMatchObject({
      code: 'ADMISSION_REFUSED',
      message: expect.stringContaining('lower the task') as unknown,
    });
    await expect(
      admit({ label: 'files', memoryBytes: MiB, files: 5000, dir, capacity }),
    ).rejects.toMatchObject({
      code: 'ADMISSION_REFUSED',
    });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('holds nothing for a harness that was SIGKILLed, and keeps concurrent harnesses within the capacity', async () => {
    const dir = ledger();
    const module = path.join(import.meta.dirname, '..', 'dist', 'index.js');
    expect(fs.existsSync(module)).toBe(true);
    // Each child process admits 40 MiB, says so, and holds it until killed or for 300 ms.
    const child = (hold: 'forever' | 'briefly') =>
      spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import { admit } from ${JSON.stringify(module)};
           const a = await admit({ label: 'child', memoryBytes: ${40 * MiB}, files: 10, dir: ${JSON.stringify(dir)}, capacity: ${JSON.stringify(capacity)}, waitMs: 20000 });
           process.stdout.write('admitted ' + Date.now() + '\\n');
           ${hold === 'forever' ? 'setInterval(() => {}, 1000);' : "await new Promise((r) => setTimeout(r, 300)); a.release(); process.stdout.write('released ' + Date.now() + '\\n');"}`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
    const holder = child('forever');
    await new Promise<void>((resolve) =>
      holder.stdout.once('data', () => {
        resolve();
      }),
    );
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    // Its reservation file is still there, but its holder is dead: 100 MiB are free again.
    expect(fs.readdirSync(dir).some((name) => name.endsWith('.json'))).toBe(true);
    const mine = await admit({
      label: 'after',
      memoryBytes: 100 * MiB,
      files: 1,
      dir,
      capacity,
      waitMs: 2000,
    });
    mine.release();
    // Six harnesses of 40 MiB against 100 MiB: never more than two hold a reservation at once.
    const events: { at: number; delta: number }[] = [];
    await Promise.all(
      Array.from({ length: 6 }, () => {
        const process_ = child('briefly');
        let out = '';
        process_.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
        });
        return new Promise<void>((resolve, reject) => {
          process_.once('exit', (code) => {
            if (code !== 0) {
              reject(new Error(`child exited ${code}`));
              return;
            }
            for (const line of out.trim().split('\n')) {
              const [what, at] = line.split(' ');
              events.push({ at: Number(at), delta: what === 'admitted' ? 1 : -1 });
            }
            resolve();
          });
        });
      }),
    );
    expect(events).toHaveLength(12);
    let live = 0;
    let most = 0;
    // Releases before admissions at the same millisecond (a release is written before the next admit).
    for (const event of events.sort((a, b) => a.at - b.at || a.delta - b.delta)) {
      live += event.delta;
      most = Math.max(most, live);
    }
    expect(most).toBeLessThanOrEqual(2);
    expect(most).toBe(2);
  }, 60_000);

  it('gives a task without a memory limit a quarter of what the host can give, never the whole host', () => {
    const host = hostCapacity();
    expect(defaultEpisodeMemoryBytes(host)).toBeLessThanOrEqual(host.memoryBytes / 4);
    expect(defaultEpisodeMemoryBytes(host)).toBeGreaterThan(host.memoryBytes / 4 - 4096);
    expect(defaultEpisodeMemoryBytes({ memoryBytes: 8 * 1024 * MiB, files: 1 })).toBe(2 * 1024 * MiB);
  });
});
