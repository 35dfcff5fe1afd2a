// Benchmark: time to reap AND confirm a cohort of N processes of one uid (mixed escapes: a
// third plain `cmd &` sleepers, a third `setsid -f` daemons, a third double forks), side by
// side with tree-kill on the student's top shell and with a `pkill -KILL -u <uid>` loop that
// stops when `pgrep -u <uid>` finds no live process. Reports the wall time of each, the
// processes that can still run when it says it is done (survivors: alive without SIGKILL
// pending) and those still in the kernel's exit work then (exiting: they run no user code).
//
// Needs root and cgroup v1 pids+freezer. Every cohort runs inside a pids cgroup created here
// with pids.max set above the largest size and read back (a bounded limit, never the bare
// host). Run: `pnpm --filter @karotte/proc-reaper build && node bench/proc-reaper/reap.mjs`
// (sizes as arguments: `node bench/proc-reaper/reap.mjs 100 1000 5000`).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { reap } from '../../packages/proc-reaper/dist/index.js';

const require = createRequire(new URL('../../packages/proc-reaper/package.json', import.meta.url));
const treeKillPath = require.resolve('tree-kill');

const SIZES = process.argv.slice(2).length > 0 ? process.argv.slice(2).map(Number) : [100, 1000, 5000];
const REPS = Number(process.env.KAROTTE_BENCH_REPS ?? 3);
const PIDS_MAX = Math.max(...SIZES) + 600;
const SETPRIV = '/usr/bin/setpriv';
const PKILL = '/usr/bin/pkill';
const PGREP = '/usr/bin/pgrep';
const LIVE_STATES = 'R,S,D,T,t,W,P,I';
const TREE_KILL_BOUND_MS = 120_000;

if (process.geteuid() !== 0) {
  console.error('the reaper benchmark needs root (real uids, cgroups)');
  process.exit(2);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Live (non-zombie) pids of uid from /proc by real uid; `runnable` those without SIGKILL pending. */
function liveOf(uid) {
  const out = [];
  const runnable = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = fs.readFileSync(`/proc/${name}/status`, 'latin1');
      if (/^Uid:\s+(\d+)/m.exec(status)?.[1] === String(uid) && /^State:\s+(\S)/m.exec(status)?.[1] !== 'Z') {
        out.push(Number(name));
        const pending = [/^SigPnd:\s*(\S+)/m, /^ShdPnd:\s*(\S+)/m].some(
          (field) => (BigInt(`0x${field.exec(status)?.[1] ?? '0'}`) & (1n << 8n)) !== 0n,
        );
        if (!pending) runnable.push(Number(name));
      }
    } catch {
      // exited
    }
  }
  return Object.assign(out, { runnable });
}

// A cgroup v1 pids+freezer pair implementing KillableGroup as @karotte/limits does: freeze,
// SIGKILL every member, thaw; with holdFrozen, when the freeze took and every member is in the
// freezer group, it stays frozen and hands back the hold (the killed members and thaw).
const name = `karotte-bench-reaper-${process.pid}`;
const pidsDir = `/sys/fs/cgroup/pids/${name}`;
const freezerDir = `/sys/fs/cgroup/freezer/${name}`;
fs.mkdirSync(pidsDir);
fs.mkdirSync(freezerDir);
fs.writeFileSync(`${pidsDir}/pids.max`, String(PIDS_MAX));
const readBack = fs.readFileSync(`${pidsDir}/pids.max`, 'utf8').trim();
if (readBack !== String(PIDS_MAX)) throw new Error(`pids.max reads back ${readBack}`);
const readIds = (file) => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number);
const group = {
  name,
  async pids() {
    return [...new Set([...readIds(`${pidsDir}/cgroup.procs`), ...readIds(`${freezerDir}/cgroup.procs`)])];
  },
  async killAll({ holdFrozen = false } = {}) {
    const state = `${freezerDir}/freezer.state`;
    const frozen = () => fs.readFileSync(state, 'utf8').trim() === 'FROZEN';
    fs.writeFileSync(state, 'FROZEN');
    const deadline = Date.now() + 5000;
    while (!frozen() && Date.now() < deadline) await sleep(2);
    const held = holdFrozen && frozen();
    const listed = (await this.pids()).sort((a, b) => a - b);
    const members = listed.filter((pid) => {
      try {
        process.kill(pid, 'SIGKILL');
        return true;
      } catch {
        return false; // exited
      }
    });
    let thawed = false;
    const thaw = () => {
      if (!thawed) fs.writeFileSync(state, 'THAWED');
      thawed = true;
    };
    const inFreezer = new Set(readIds(`${freezerDir}/cgroup.procs`));
    if (held && listed.every((pid) => inFreezer.has(pid))) {
      return { mechanism: 'freeze-kill-thaw', signalled: members.length, hold: { members, thaw } };
    }
    thaw();
    return { mechanism: 'freeze-kill-thaw', signalled: members.length };
  },
};

const COHORT = [
  'n=$1; third=$((n / 3)); rest=$((n - 2 * third))',
  'i=0; while [ $i -lt $third ]; do sleep 1000 & i=$((i + 1)); done',
  'i=0; while [ $i -lt $third ]; do setsid -f sleep 1000; i=$((i + 1)); done',
  'i=0; while [ $i -lt $rest ]; do ( sleep 1000 & ); i=$((i + 1)); done',
  ': > "$2"',
  'exec sleep 1000',
].join('\n');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-reaper-'));
fs.chmodSync(work, 0o777);
let uidCounter = 0;

async function startCohort(size) {
  uidCounter += 1;
  const uid = 3_910_000_000 + (process.pid % 100_000) * 100 + uidCounter;
  const ready = path.join(work, `ready-${uid}`);
  const launcher = spawn(
    '/bin/sh',
    [
      '-c',
      'echo $$ > "$1" && echo $$ > "$2" && shift 2 && exec "$@"',
      'karotte-launch',
      `${pidsDir}/cgroup.procs`,
      `${freezerDir}/cgroup.procs`,
      SETPRIV,
      '--reuid',
      String(uid),
      '--regid',
      String(uid),
      '--clear-groups',
      '--',
      '/bin/bash',
      '-c',
      COHORT,
      'karotte-cohort',
      String(size),
      ready,
    ],
    { stdio: 'ignore', detached: true, env: { PATH: '/usr/bin:/bin' } },
  );
  const deadline = Date.now() + 120_000;
  while (!fs.existsSync(ready) || liveOf(uid).length < size + 1) {
    if (Date.now() > deadline)
      throw new Error(`cohort of ${size} did not start (${liveOf(uid).length} live)`);
    await sleep(50);
  }
  return { uid, launcher };
}

/** Kill whatever is left and wait until the group holds nothing (zombies included). */
async function cleanup(uid) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    spawnSync(SETPRIV, [
      '--reuid',
      String(uid),
      '--regid',
      String(uid),
      '--clear-groups',
      '/bin/kill',
      '-KILL',
      '-1',
    ]);
    for (const pid of liveOf(uid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // exited
      }
    }
    // pids.current counts zombies until this host's PID 1 reaps them: wait for 0, or the next
    // cohort would start against a pids.max that is partly used up.
    const current = Number(fs.readFileSync(`${pidsDir}/pids.current`, 'utf8'));
    if (current === 0 && liveOf(uid).length === 0) return;
    if (Date.now() > deadline) throw new Error(`cohort of uid ${uid} did not go away`);
    await sleep(100);
  }
}

const ONLY = process.env.KAROTTE_BENCH_ONLY;
const ALL_METHODS = {
  'karotte reap({ uid })': async ({ uid }) => {
    const record = await reap({ uid });
    return { confirmed: record.confirmedEmpty, passes: record.passes, dying: record.dying };
  },
  'karotte reap({ uid, group })': async ({ uid }) => {
    const record = await reap({ uid, group });
    return { confirmed: record.confirmedEmpty, passes: record.passes, dying: record.dying };
  },
  'pkill -KILL -u loop': async ({ uid }) => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      spawnSync(PKILL, ['-KILL', '-u', String(uid)]);
      if (spawnSync(PGREP, ['-u', String(uid), '-r', LIVE_STATES]).status === 1) return { confirmed: false };
      if (Date.now() > deadline) return { confirmed: false };
    }
  },
  'tree-kill(top shell)': async ({ launcher }) => {
    // tree-kill spawns one `ps` per process of the tree. It runs in its own Node process so
    // its child storm cannot starve this event loop, and that process is killed at the bound.
    const runner = spawn(
      process.execPath,
      [
        '-e',
        'require(process.argv[1])(Number(process.argv[2]), "SIGKILL", () => process.exit(0))',
        treeKillPath,
        String(launcher.pid),
      ],
      { stdio: 'ignore' },
    );
    const finished = await new Promise((resolve) => {
      const timer = setTimeout(() => {
        runner.kill('SIGKILL');
        resolve(false);
      }, TREE_KILL_BOUND_MS);
      runner.on('exit', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    return { confirmed: false, gaveUp: !finished };
  },
};

// Warm-up, so no method pays one-time costs in its first timed run (module JIT, zod schema
// compilation, page cache of the binaries).
await reap({ uid: 3_919_999_999 });
spawnSync(PKILL, ['-KILL', '-u', '3919999999']);
spawnSync(PGREP, ['-u', '3919999999']);

const METHODS = Object.fromEntries(
  Object.entries(ALL_METHODS).filter(
    ([name]) => !ONLY || ONLY.split(',').some((part) => name.includes(part)),
  ),
);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const results = [];
try {
  for (const size of SIZES) {
    const runs = Object.fromEntries(
      Object.keys(METHODS).map((method) => [
        method,
        { times: [], survivors: [], exiting: [], passes: [], gaveUp: false },
      ]),
    );
    // Interleave the methods rep by rep, so background load hits them alike.
    for (let rep = 0; rep < REPS; rep += 1) {
      for (const [method, run] of Object.entries(METHODS)) {
        // tree-kill of 5,000 takes over a minute a run and its result never changes: one run.
        if (rep > 0 && size >= 5000 && method.startsWith('tree-kill')) continue;
        const cohort = await startCohort(size);
        const started = performance.now();
        const outcome = await run(cohort);
        const elapsed = performance.now() - started;
        // Survivors: processes of the uid that can still run (alive, no SIGKILL pending) the
        // moment the method says it is done. Those still in the kernel's exit work are counted
        // apart: they run no user code again.
        const left = liveOf(cohort.uid);
        runs[method].times.push(elapsed);
        if (outcome.gaveUp) runs[method].gaveUp = true;
        runs[method].survivors.push(left.runnable.length);
        runs[method].exiting.push(left.length - left.runnable.length);
        if (outcome.passes !== undefined) runs[method].passes.push(outcome.passes);
        await cleanup(cohort.uid);
      }
    }
    for (const [method, { times, survivors, exiting, passes, gaveUp }] of Object.entries(runs)) {
      const row = {
        size,
        method,
        ms: median(times),
        survivors: Math.max(...survivors),
        exiting: Math.max(...exiting),
        reps: times.length,
        passes: passes.length > 0 ? passes.join('/') : '',
        gaveUp,
      };
      results.push(row);
      console.log(
        `${String(size).padStart(5)}  ${method.padEnd(28)} ${row.ms.toFixed(0).padStart(7)} ms  survivors ${row.survivors}  exiting ${row.exiting}` +
          (row.passes ? `  passes ${row.passes}` : '') +
          `  (runs: ${times.map((time) => time.toFixed(0)).join(', ')})`,
      );
    }
  }
} finally {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    try {
      fs.rmdirSync(pidsDir);
      fs.rmdirSync(freezerDir);
      break;
    } catch {
      await group.killAll().catch(() => undefined);
      await sleep(200);
    }
  }
  fs.rmSync(work, { recursive: true, force: true });
}

console.log(
  '\n| cohort | method | time to kill and confirm | survivors (can run) | still exiting | vs reap({ uid }) |',
);
console.log('|---:|---|---:|---:|---:|---:|');
for (const row of results) {
  const ours = results.find((other) => other.size === row.size && other.method === 'karotte reap({ uid })');
  const ratio = ours ? (row.ms / ours.ms).toFixed(2) : '';
  const time = row.gaveUp ? `> ${TREE_KILL_BOUND_MS / 1000} s (gave up)` : `${row.ms.toFixed(0)} ms`;
  console.log(
    `| ${row.size} | ${row.method} | ${time} | ${row.survivors} | ${row.exiting} | ${row.gaveUp ? '>' : ''}${ratio}× |`,
  );
}
