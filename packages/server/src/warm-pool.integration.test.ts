// The server's warm pool (`warmPool`): the first episode of a task is made cold, the pool fills
// in the background, the next episode starts on the pooled sandbox (a fresh one, never an
// episode's), and close() destroys what was made ahead and never used. Real sandboxes, real
// graders, over real HTTP. Needs root.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironmentClient, type EnvironmentClient } from './client.js';
import { createEnvironmentServer } from './server.js';
import {
  eventually,
  examples,
  leasedUidsOf,
  leftovers,
  sandboxUidOf,
  startTestServer,
  type TestServer,
} from '../test/protocols.js';

/** Grader uids this process holds (a judge prepared ahead holds one while it waits). */
function graderLeasesOf(ownerPid: number): number[] {
  const dir = '/run/karotte/grader-uids';
  const names = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  return names.flatMap((name) => {
    const match = /^(\d+)\.lock$/.exec(name);
    if (match === null) return [];
    try {
      const record = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as { ownerPid?: number };
      return record.ownerPid === ownerPid ? [Number(match[1])] : [];
    } catch {
      return [];
    }
  });
}

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI)
  console.log('[karotte] warm pool integration tests skipped: they need root (real sandboxes)');

describe.skipIf(!isRoot && !inCI)('the warm pool of the environment server', () => {
  let t: TestServer;
  let client: EnvironmentClient;
  const seen = new Set<number>();
  beforeAll(async () => {
    t = await startTestServer({ warmPool: 1, taskIds: ['roman-numerals'] });
    client = createEnvironmentClient({ baseUrl: `http://${t.address}`, token: t.token });
  });
  afterAll(async () => {
    await t?.stop();
  });

  const uidOf = (episodeId: string): Promise<number> => sandboxUidOf(t, episodeId);

  it('hands the second episode the sandbox made ahead, and close() destroys the unused one', async () => {
    expect(t.server.warmPoolStats()).toMatchObject({ made: 0, warm: 0, cold: 0, idle: 0 });
    const first = await client.createEpisode({ taskId: 'roman-numerals' });
    const firstUid = await uidOf(first.episodeId);
    seen.add(firstUid);
    // The first episode of the task was made cold; the pool fills behind it.
    expect(t.server.warmPoolStats()).toMatchObject({ cold: 1, warm: 0 });
    expect(await eventually(() => t.server.warmPoolStats()?.idle === 1, 60_000)).toBe(true);
    const ahead = leasedUidsOf(process.pid).filter((uid) => uid !== firstUid);
    expect(ahead).toHaveLength(1);
    for (const uid of ahead) seen.add(uid);

    const second = await client.createEpisode({ taskId: 'roman-numerals' });
    const secondUid = await uidOf(second.episodeId);
    seen.add(secondUid);
    expect(secondUid).toBe(ahead[0]);
    expect(t.server.warmPoolStats()).toMatchObject({ cold: 1, warm: 1, failed: 0, discarded: 0 });
    for (const episode of [first, second]) {
      const result = await client.finish(episode.episodeId);
      expect(result.status, JSON.stringify(result.error)).not.toBe('error');
    }
    // Refilled again: one sandbox waits that no episode will ever use, and one grader made
    // ahead for the task's judge.
    expect(await eventually(() => t.server.warmPoolStats()?.idle === 1, 60_000)).toBe(true);
    expect(await eventually(() => graderLeasesOf(process.pid).length === 1, 60_000)).toBe(true);
    const unused = leasedUidsOf(process.pid);
    expect(unused).toHaveLength(1);
    expect(seen.has(unused[0]!)).toBe(false);
    seen.add(unused[0]!);

    await t.stop();
    expect(t.server.warmPoolStats()).toMatchObject({ idle: 0 });
    expect(leasedUidsOf(process.pid)).toEqual([]);
    expect(graderLeasesOf(process.pid)).toEqual([]);
    for (const uid of seen) expect(leftovers(uid, undefined), `uid ${uid}`).toEqual([]);
  });

  it('refuses warmPool beside a createWorld of the caller (which makes its own worlds)', async () => {
    await expect(
      createEnvironmentServer({
        tasksDir: examples,
        token: 'karotte-test-token-0123456789',
        warmPool: 1,
        createWorld: () => Promise.reject(new Error('never called')),
      }),
    ).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });
});
