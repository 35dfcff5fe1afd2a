import process from 'node:process';
import { KarotteError } from '@karotte/base';
import { CoreError, recoverLeftovers, type WorldFactory } from '@karotte/core';

/**
 * `create`, after reclaiming what harnesses killed earlier left behind (as root), once for all
 * the worlds this factory makes: the first world waits for the reclaim, and every later one
 * (an eval's other episodes, running at the same time) waits for the same reclaim, so no world
 * of this process exists while it runs. Recovery is the first part of making the world, inside
 * the episode: when it fails (an unsafe state directory, a leftover that will not go), each
 * episode refuses to start as on any host that cannot give the sandbox: status `error`, and
 * result.json says why. Run before the episode, its throw used to end the command with exit 1
 * and no result.json at all.
 */
export function recoveringWorld(create: WorldFactory): WorldFactory {
  let recovery: Promise<void> | undefined;
  return async (spec) => {
    if (process.getuid?.() === 0) {
      recovery ??= recoverLeftovers().then(() => undefined);
      try {
        await recovery;
      } catch (error) {
        const reason = KarotteError.isInstance(error)
          ? `${error.code}: ${error.message}`
          : error instanceof Error
            ? error.message
            : String(error);
        throw new CoreError(
          'CONFINEMENT_UNAVAILABLE',
          `cannot reclaim the leftovers of earlier runs, so no sandbox was made: ${reason}`,
          { cause: error },
        );
      }
    }
    return create(spec);
  };
}
