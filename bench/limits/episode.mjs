// Setting up and tearing down one episode's limits (cgroup group + disk quota) against the
// bare floor of the same kernel operations, side by side:
//   group        createGroup() + remove()            vs  mkdir + rmdir of the cgroup directories
//                                                        (one per hierarchy the group uses)
//   quota cold   createQuota() + remove()            vs  mount -o loop + umount of an existing image
//   quota pool   pool.acquire() + remove()           vs  the same mount + umount
//   episode      createEpisodeLimits(pool) + remove  vs  both floors together
//
//   pnpm --filter @karotte/limits build && node bench/limits/episode.mjs [--runs 20]
//
// Needs root, cgroups and loop devices. Everything lives under karotte-bench-limits-* temp
// directories and karotte-bench-* cgroups, removed at the end, also on failure.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  createEpisodeLimits,
  createGroup,
  createQuota,
  createQuotaPool,
  detectCgroups,
} from '../../packages/limits/dist/index.js';

const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg === -1 ? 20 : Number(process.argv[runsArg + 1]);
const MiB = 1024 * 1024;
const QUOTA = { bytes: 256 * MiB, inodes: 16_384 };
const UID = 3_999_000_123;

if (process.geteuid() !== 0) {
  console.error('needs root (cgroups, loop devices)');
  process.exit(1);
}

// As by default: records of groups on a tmpfs (/run), images on disk (the OS temp dir here).
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-limits-'));
const stateDir = fs.mkdtempSync('/run/karotte-bench-limits-');
const imageDir = path.join(base, 'images');
fs.mkdirSync(imageDir, { mode: 0o711 });

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function run(file, args) {
  const result = spawnSync(file, args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${file} ${args.join(' ')}: ${result.stderr}`);
}

/**
 * Time `setup` and `teardown` separately, `RUNS` times; medians in ms. `idle` runs untimed
 * before each (the pool refilling while the episode would be running: an episode's own work
 * takes far longer than one refill).
 */
async function measure(setup, teardown, idle = async () => {}) {
  const ups = [];
  const downs = [];
  for (let i = 0; i < RUNS; i += 1) {
    await idle();
    let started = performance.now();
    const value = await setup(i);
    ups.push(performance.now() - started);
    await idle();
    started = performance.now();
    await teardown(value);
    downs.push(performance.now() - started);
  }
  return { setup: median(ups), teardown: median(downs), total: median(ups.map((up, i) => up + downs[i])) };
}

const detection = detectCgroups();
if (detection.hierarchy === null) throw new Error(`no cgroups: ${detection.reasons.join('; ')}`);
const h = detection.hierarchy;
const parents =
  h.version === 2 ? [h.base] : [...new Set([h.memory, h.pids, h.freezer, h.cpu].filter(Boolean))];

const rows = [];
let pool;
try {
  // Floors.
  const bareCgroup = await measure(
    (i) => {
      const dirs = parents.map((parent) => path.join(parent, `karotte-bench-bare-${process.pid}-${i}`));
      for (const dir of dirs) fs.mkdirSync(dir);
      return dirs;
    },
    (dirs) => {
      for (const dir of dirs) fs.rmdirSync(dir);
    },
  );
  const image = path.join(base, 'karotte-bench-existing.img');
  const mnt = path.join(base, 'karotte-bench-mnt');
  fs.mkdirSync(mnt);
  run('/usr/bin/fallocate', ['-l', String(QUOTA.bytes), image]);
  run('/usr/sbin/mkfs.ext4', ['-q', '-F', '-m', '0', '-N', String(QUOTA.inodes), '-E', 'nodiscard', image]);
  const bareMount = await measure(
    () => run('/usr/bin/mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev', image, mnt]),
    () => run('/usr/bin/umount', [mnt]),
  );
  fs.rmSync(image);

  // Ours.
  const group = await measure(
    (i) =>
      createGroup({
        stateDir,
        name: `karotte-bench-${process.pid}-${i}`,
        memoryBytes: 512 * MiB,
        eventPollMs: 0,
      }),
    (created) => created.remove(),
  );
  const cold = await measure(
    () => createQuota({ imageDir, ...QUOTA, ownerUid: UID, pollMs: 0 }),
    (quota) => quota.remove(),
  );
  pool = createQuotaPool({ imageDir, ...QUOTA, size: 2 });
  const pooled = await measure(
    () => pool.acquire({ ownerUid: UID, pollMs: 0 }),
    (quota) => quota.remove(),
    () => pool.filled(),
  );
  const episode = await measure(
    (i) =>
      createEpisodeLimits({
        group: {
          stateDir,
          name: `karotte-bench-ep-${process.pid}-${i}`,
          memoryBytes: 512 * MiB,
          eventPollMs: 0,
        },
        quota: { ownerUid: UID, pollMs: 0 },
        quotaPool: pool,
      }),
    (limits) => limits.remove(),
    () => pool.filled(),
  );
  const floorEpisode = {
    setup: bareCgroup.setup + bareMount.setup,
    teardown: bareCgroup.teardown + bareMount.teardown,
    total: bareCgroup.total + bareMount.total,
  };
  rows.push([
    'group (v' + h.version + ', ' + parents.length + ' hierarchies)',
    group,
    'mkdir+rmdir',
    bareCgroup,
  ]);
  rows.push(['quota cold (fallocate+mkfs+loop+mount)', cold, 'mount+umount', bareMount]);
  rows.push(['quota from pool', pooled, 'mount+umount', bareMount]);
  rows.push(['episode (group + pooled quota)', episode, 'both floors', floorEpisode]);
} finally {
  if (pool) await pool.close();
  fs.rmSync(base, { recursive: true, force: true });
  fs.rmSync(stateDir, { recursive: true, force: true });
}

const f = (ms) => ms.toFixed(2).padStart(7);
console.log(
  `@karotte/limits episode setup/teardown, median of ${RUNS} runs, ms (quota ${QUOTA.bytes / MiB} MiB, ${QUOTA.inodes} inodes)`,
);
console.log('');
console.log(
  `${'what'.padEnd(42)} ${'setup'.padStart(7)} ${'teardn'.padStart(7)} ${'total'.padStart(7)} | ${'floor'.padEnd(12)} ${'setup'.padStart(7)} ${'teardn'.padStart(7)} ${'total'.padStart(7)} | ratio`,
);
for (const [name, ours, floorName, floor] of rows) {
  console.log(
    `${name.padEnd(42)} ${f(ours.setup)} ${f(ours.teardown)} ${f(ours.total)} | ${floorName.padEnd(12)} ${f(floor.setup)} ${f(floor.teardown)} ${f(floor.total)} | ${(ours.total / floor.total).toFixed(2)}x`,
  );
}
