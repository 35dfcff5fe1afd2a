import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWorker, DispatchError, parseRedisUrl } from './index.js';

describe('createWorker', () => {
  it('refuses options it does not know, naming them', () => {
    expect(() =>
      createWorker({
        redis: parseRedisUrl('redis://h:1'),
        tasksDir: '/x',
        artifactsDir: '/y',
        lockMS: 5,
      } as never),
    ).toThrow(/lockMS/);
  });

  it('gives up on a Redis that does not answer: REDIS_UNAVAILABLE after connectTimeoutMs, nothing left running', async () => {
    // A port nothing listens on: taken, then closed again.
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => {
          resolve(p);
        });
      });
    });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-dispatch-unit-'));
    fs.mkdirSync(path.join(dir, 'tasks'));
    const recovered: string[] = [];
    const worker = createWorker({
      redis: parseRedisUrl(`redis://127.0.0.1:${port}`),
      tasksDir: path.join(dir, 'tasks'),
      artifactsDir: path.join(dir, 'artifacts'),
      connectTimeoutMs: 500,
      startupCheck: false,
      recover: () => {
        recovered.push('ran');
        return Promise.resolve(null);
      },
    });
    try {
      const error: unknown = await worker.start().catch((e: unknown) => e);
      expect(DispatchError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: 'REDIS_UNAVAILABLE', kind: 'system' });
      // Leftovers are reclaimed before Redis is even asked.
      expect(recovered).toEqual(['ran']);
      expect(worker.ready()).toBe(false);
    } finally {
      await worker.drain();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
