// Load: 64 episodes driven concurrently over HTTP against `karotte serve --max-episodes 4`: at
// most 4 alive at once, the rest told to retry (503 + Retry-After, which the client honours),
// every episode a verdict (0 error), and nothing of any of them left on the host afterwards.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { examples, leftoversOfUid, replayOf, startServe } from './serve-support.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI) console.log('[karotte] serve load test skipped: it needs root (real sandboxes)');

const EPISODES = 64;
const MAX_EPISODES = 4;

describe.skipIf(!isRoot && !inCI)('karotte serve under load', () => {
  it(
    `${EPISODES} concurrent episodes, --max-episodes ${MAX_EPISODES}: 0 error, the rest retried, nothing left`,
    { timeout: 600_000 },
    async () => {
      const served = await startServe(['--max-episodes', String(MAX_EPISODES)]);
      // Stopped whatever happens, and checked after: a failure above is reported as itself.
      let stopped: number | null = null;
      try {
        const control = replayOf(path.join(examples, 'quarterly-revenue', 'control.json'));
        const wrong = [
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: 'c0',
                type: 'function',
                function: { name: 'bash', arguments: '{"command": "echo 1 > answer.txt"}' },
              },
            ],
          },
          { role: 'assistant', content: 'done' },
        ];
        const client = served.client({ maxRetries: 10_000 });
        const probe = served.client({ maxRetries: 0 });
        let refused = 0;
        let peak = 0;
        let alive = 0;
        const results = await Promise.all(
          Array.from({ length: EPISODES }, async (_, i) => {
            // Each driver first asks without retrying, to count the 503s, then with the retrying client.
            let episode;
            const first = await probe.request('POST', '/v1/episodes', { taskId: 'quarterly-revenue' });
            if (first.status === 201) episode = first.body as { episodeId: string };
            else {
              expect(first.status).toBe(503);
              expect(first.headers['retry-after']).toBeDefined();
              refused += 1;
              episode = await client.createEpisode({ taskId: 'quarterly-revenue' });
            }
            alive += 1;
            peak = Math.max(peak, alive);
            const messages = i % 2 === 0 ? control : wrong;
            for (const [t, message] of messages.entries()) {
              const answer = await client.turn(episode.episodeId, {
                turnId: `t${t}`,
                message: message as never,
              });
              if (answer.done) break;
            }
            alive -= 1;
            return client.finish(episode.episodeId);
          }),
        );
        const statuses = results.map((r) => r.status);
        // An error episode is named with its error, so a failure says what went wrong.
        expect(
          results
            .filter((r) => r.status === 'error')
            .map((r) => JSON.stringify((r as { error?: unknown }).error)),
        ).toEqual([]);
        expect(statuses.filter((s) => s === 'passed')).toHaveLength(EPISODES / 2);
        expect(statuses.filter((s) => s === 'failed')).toHaveLength(EPISODES / 2);
        expect(refused).toBeGreaterThan(0);
        expect(peak).toBeLessThanOrEqual(MAX_EPISODES);
        const uids = results.map((r) => r.sandbox.uid!);
        for (const uid of new Set(uids)) expect(leftoversOfUid(uid)).toEqual([]);
        console.log(
          `[karotte] load: ${EPISODES} episodes, ${refused} first asks refused with 503, peak ${peak} alive, ${new Set(uids).size} distinct uids`,
        );
      } finally {
        stopped = await served.stop();
      }
      expect(stopped, served.stderr()).toBe(0);
    },
  );
});
