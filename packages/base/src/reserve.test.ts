// The warm reserve's bookkeeping, with plain objects for what it keeps (the pools built on it
// are tested with real sandboxes and judges in their own packages).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createWarmReserve, type WarmReserve, type WarmReserveOptions } from './reserve.js';

interface Thing {
  readonly n: number;
  whole: boolean;
}

function harness(overrides: Partial<WarmReserveOptions<Thing>> = {}) {
  let next = 0;
  const released: number[] = [];
  const signals: AbortSignal[] = [];
  const reserve = createWarmReserve<Thing>({
    size: 2,
    maxAgeMs: 60_000,
    make: async (signal) => {
      signals.push(signal);
      await new Promise((resolve) => setTimeout(resolve, 1));
      next += 1;
      return { n: next, whole: true };
    },
    check: (thing) => (thing.whole ? [] : [`thing ${thing.n} broke`]),
    alive: (thing) => thing.whole,
    release: (thing) => {
      released.push(thing.n);
      return Promise.resolve();
    },
    refillOnSweep: true,
    ...overrides,
  });
  return { reserve, released, signals };
}

async function filled(reserve: WarmReserve<Thing>, idle: number): Promise<void> {
  await vi.waitFor(() => {
    expect(reserve.stats().idle).toBe(idle);
  });
}

afterEach(() => {
  vi.useRealTimers();
});

describe('createWarmReserve', () => {
  it('makes nothing until asked, fills to size one at a time, hands each out once', async () => {
    const { reserve, released } = harness();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(reserve.stats()).toMatchObject({ made: 0, idle: 0 });
    expect(await reserve.take()).toBeUndefined();
    reserve.fill();
    await filled(reserve, 2);
    const first = await reserve.take();
    const second = await reserve.take();
    expect([first?.n, second?.n]).toEqual([1, 2]);
    // Each take started a refill: two more are made, never the ones handed out.
    await filled(reserve, 2);
    expect([(await reserve.take())?.n, (await reserve.take())?.n]).toEqual([3, 4]);
    expect(await reserve.close()).toEqual([]);
    // The refill in flight at close() (one at a time: the fifth) is let go once made.
    expect(reserve.stats()).toMatchObject({ made: 5, warm: 4, discarded: 0, idle: 0 });
    expect(released).toEqual([5]);
  });

  it('discards one its check refuses and hands out the next', async () => {
    const { reserve, released } = harness({ check: (thing) => (thing.n === 1 ? ['refused'] : []) });
    reserve.fill();
    await filled(reserve, 2);
    expect((await reserve.take())?.n).toBe(2);
    expect(reserve.stats()).toMatchObject({ warm: 1, discarded: 1, lastDiscard: 'refused' });
    await vi.waitFor(() => {
      expect(released).toEqual([1]);
    });
    // A check that throws refuses too.
    const throwing = harness({
      size: 1,
      check: () => {
        throw new Error('cannot look');
      },
    });
    throwing.reserve.fill();
    await filled(throwing.reserve, 1);
    expect(await throwing.reserve.take()).toBeUndefined();
    expect(throwing.reserve.stats().lastDiscard).toBe('its check failed: cannot look');
    await throwing.reserve.close();
    await reserve.close();
  });

  it('drops the stale at the sweep, and refills only when told to', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'performance'] });
    const { reserve, released } = harness({ maxAgeMs: 4_000, refillOnSweep: false, size: 1 });
    reserve.fill();
    await filled(reserve, 1);
    vi.advanceTimersByTime(5_000); // older than maxAgeMs: the sweep (every 1 s) drops it
    expect(reserve.stats()).toMatchObject({ idle: 0, discarded: 1, lastDiscard: 'older than 4000 ms' });
    await vi.waitFor(() => {
      expect(released).toEqual([1]);
    });
    // refillOnSweep false: nothing was made again.
    expect(reserve.stats().made).toBe(1);
    reserve.fill();
    await filled(reserve, 1);
    expect(await reserve.take()).toMatchObject({ n: 2 });
    await reserve.close();
  });

  it('a broken kept one goes at the sweep', async () => {
    vi.useFakeTimers({ toFake: ['setInterval'] });
    const things: Thing[] = [];
    const { reserve, released } = harness({
      size: 1,
      refillOnSweep: false,
      make: () => {
        const thing = { n: things.length + 1, whole: true };
        things.push(thing);
        return Promise.resolve(thing);
      },
    });
    reserve.fill();
    await filled(reserve, 1);
    things[0]!.whole = false;
    vi.advanceTimersByTime(15_000); // the sweep runs every maxAgeMs / 4
    expect(reserve.stats()).toMatchObject({ idle: 0, discarded: 1, lastDiscard: 'no longer whole' });
    await reserve.close();
    expect(released).toEqual([1]);
  });

  it('close() aborts a make in flight, releases what it then makes and reports failed releases', async () => {
    let finish: (() => void) | undefined;
    const { reserve, released, signals } = harness({
      size: 1,
      make: (signal) =>
        new Promise((resolve) => {
          signals.push(signal);
          finish = () => {
            resolve({ n: 7, whole: true });
          };
        }),
      release: (thing) => {
        released.push(thing.n);
        return Promise.reject(new Error(`cannot release ${thing.n}`));
      },
    });
    reserve.fill();
    await vi.waitFor(() => {
      expect(finish).toBeDefined();
    });
    const closing = reserve.close();
    expect(signals[0]?.aborted).toBe(true);
    expect(reserve.closed).toBe(true);
    finish!();
    const failures = await closing;
    expect(released).toEqual([7]);
    expect(failures.map((error) => (error as Error).message)).toEqual(['cannot release 7']);
    expect(await reserve.take()).toBeUndefined();
    expect(await reserve.close()).toBe(await closing); // idempotent
  });

  it('a close() during a take() releases the one being checked and hands out nothing', async () => {
    let pass: (() => void) | undefined;
    const { reserve, released } = harness({
      size: 1,
      check: () =>
        new Promise<string[]>((resolve) => {
          pass = () => {
            resolve([]);
          };
        }),
    });
    reserve.fill();
    await filled(reserve, 1);
    const taking = reserve.take();
    await vi.waitFor(() => {
      expect(pass).toBeDefined();
    });
    const closing = reserve.close();
    pass!();
    expect(await taking).toBeUndefined();
    await closing;
    expect(released).toEqual([1]);
  });

  it('counts a make that throws and keeps working', async () => {
    let calls = 0;
    const { reserve } = harness({
      size: 1,
      make: () => {
        calls += 1;
        if (calls === 1) return Promise.reject(new Error('host busy'));
        return Promise.resolve({ n: calls, whole: true });
      },
    });
    reserve.fill();
    await vi.waitFor(() => {
      expect(reserve.stats().failed).toBe(1);
    });
    expect(reserve.stats().idle).toBe(0);
    reserve.fill();
    await filled(reserve, 1);
    expect((await reserve.take())?.n).toBe(2);
    await reserve.close();
  });
});
