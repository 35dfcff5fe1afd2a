// Every attack of the red-team catalog's answer-key-theft and network classes, replayed through
// `karotte serve`'s protocol (a trainer's turns over HTTP) instead of the in-process runner: each
// must score 0 and none may turn its episode into `error`. The protocol is one more way to
// drive an episode; it must not be a way around a defense.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnvironmentClient } from '@karotte/server';
import { attackReplay } from '../src/redteam/replay.js';
import { leftoversOfUid, protocolAttacks, startServe, type Served } from './serve-support.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI)
  console.log('[karotte] serve catalog integration tests skipped: they need root (real sandboxes)');

const attacks = protocolAttacks();

describe.skipIf(!isRoot && !inCI)('the catalog through karotte serve', () => {
  let served: Served;
  let client: EnvironmentClient;
  beforeAll(async () => {
    served = await startServe(['--max-episodes', '4']);
    client = served.client();
  });
  afterAll(async () => {
    expect(await served.stop()).toBe(0);
  });

  it('holds at least ten attacks of the two classes', () => {
    expect(attacks.length).toBeGreaterThanOrEqual(10);
  });

  it.each(attacks.map((attack) => [attack.id, attack] as const))(
    '%s scores 0 through the protocol, never error',
    async (_id, attack) => {
      const episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
      for (const [i, message] of attackReplay(attack, 'answer.txt').entries()) {
        const answer = await client.turn(episode.episodeId, {
          turnId: `turn-${i}`,
          message: message as never,
        });
        if (answer.done) break;
      }
      const result = await client.finish(episode.episodeId);
      expect(result.status, JSON.stringify(result.error)).not.toBe('error');
      expect(result.score).toBe(0);
      expect(result.blame).not.toBe('infra');
      expect(leftoversOfUid(result.sandbox.uid!)).toEqual([]);
    },
    120_000,
  );
});
