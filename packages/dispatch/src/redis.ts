import { z } from 'zod';
import { DispatchError } from './errors.js';

/** Where Redis is and how to log in: parsed from a `redis://` URL plus a password kept apart. */
export const redisTargetSchema = z
  .object({
    host: z.string().min(1).max(255),
    port: z.number().int().min(1).max(65_535),
    db: z.number().int().min(0).max(65_535),
    /** The password (from a file or the environment, never from the URL or argv). */
    password: z.string().min(1).max(4096).optional(),
    /** The ACL user, when not `default`. */
    username: z.string().min(1).max(255).optional(),
  })
  .strict();

export type RedisTarget = z.output<typeof redisTargetSchema>;

/**
 * Parse `redis://host:port[/db]` (the contract's form; `redis://user@host:port` names an ACL
 * user). A URL carrying a password is refused: a password on a command line is readable by
 * every user of the host (`/proc/<pid>/cmdline`).
 *
 * @throws DispatchError `INVALID_REDIS_URL`.
 */
export function parseRedisUrl(url: string, password?: string): RedisTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (error) {
    throw new DispatchError(
      'INVALID_REDIS_URL',
      `${JSON.stringify(url)} is not a URL (redis://host:port[/db])`,
      {
        cause: error,
        field: 'redis',
      },
    );
  }
  if (parsed.protocol !== 'redis:')
    throw new DispatchError('INVALID_REDIS_URL', `${url}: only redis://host:port[/db] is supported`, {
      field: 'redis',
    });
  if (parsed.password !== '')
    throw new DispatchError(
      'INVALID_REDIS_URL',
      'the Redis URL carries a password: give it in KAROTTE_REDIS_PASSWORD or a file instead (a command line is readable by every user)',
      { field: 'redis' },
    );
  if (parsed.search !== '' || parsed.hash !== '')
    throw new DispatchError('INVALID_REDIS_URL', `${url}: no query or fragment is supported`, {
      field: 'redis',
    });
  const dbText = parsed.pathname.replace(/^\//, '');
  if (dbText !== '' && !/^\d{1,5}$/.test(dbText))
    throw new DispatchError('INVALID_REDIS_URL', `${url}: the path is a database number`, { field: 'redis' });
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw new DispatchError('INVALID_REDIS_URL', `${url}: no host`, { field: 'redis' });
  return redisTargetSchema.parse({
    host,
    port: parsed.port === '' ? 6379 : Number(parsed.port),
    db: dbText === '' ? 0 : Number(dbText),
    ...(password === undefined || password === '' ? {} : { password }),
    ...(parsed.username === '' ? {} : { username: decodeURIComponent(parsed.username) }),
  });
}

/** The ioredis options of a worker's connections: commands wait through a reconnect. */
export function workerConnection(target: RedisTarget): Record<string, unknown> {
  return {
    ...baseConnection(target),
    // BullMQ requires null on a worker: a blocking command must not fail after N retries.
    maxRetriesPerRequest: null,
  };
}

/** The ioredis options of a producer's or reader's connection: a command fails after a retry. */
export function clientConnection(target: RedisTarget): Record<string, unknown> {
  return { ...baseConnection(target), maxRetriesPerRequest: 2 };
}

function baseConnection(target: RedisTarget): Record<string, unknown> {
  return {
    host: target.host,
    port: target.port,
    db: target.db,
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(target.username === undefined ? {} : { username: target.username }),
    connectTimeout: 5_000,
    keepAlive: 10_000,
    // Reconnect forever, backing off to 1 s: Redis restarts are survived, not fatal.
    retryStrategy: (times: number) => Math.min(50 * times, 1_000),
  };
}
