// reap() against real escapes, each run as a real unprivileged uid (testUid(): no passwd
// entry, no groups), some inside a real cgroup v1 pids+freezer group with a pids.max the test
// set and read back. Every test asserts (1) the record confirms, (2) the uid's process table
// is empty, (3) a heartbeat the escapees kept writing stays unwritten for 1.5 s after the
// reap. The tree-kill baseline runs the same escapes and must leave survivors: the checks can
// fail.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGroup } from '@karotte/limits';
import type { KillableGroup, LimitGroup } from '@karotte/limits';
import treeKill from 'tree-kill';
import {
  killUid,
  pidsOfUid,
  runnablePidsOfUid,
  tempDir,
  testUid,
  waitFor,
} from '../../../test/support/index.js';
import {
  V1TestGroup,
  beats,
  heartbeatsAfter,
  sleep,
  spawnStudent,
  statesOfUid,
  studentDir,
} from '../test/fixtures.js';
import { ProcReaperError, reap, reapBestEffort } from './index.js';
import { confirmedReapRecordSchema } from './record.js';
import { IN_COHORT_SCRIPT, runHelper, runInCohort } from './in-cohort.js';
import { killAsUid } from '@karotte/base';

interface Context {
  uid: number;
  dir: string;
  cleanupDir: () => void;
  /** The real episode group from @karotte/limits (cgroup v1 memory+pids+freezer here). */
  group: LimitGroup | undefined;
  /** A bare v1 pids+freezer group the test freezes by hand (the frozen-process case). */
  v1: V1TestGroup | undefined;
}

/**
 * The watcher of the forked helper, run as root, then with effective (and file-system) uid and
 * gid the student's, real and saved another, so the helper's kill(-1) does not take it. It waits
 * for a perl process whose four uids are the student's (the helper). With `probe`, it tries what
 * an attack needs: ptrace, /proc/<pid>/mem and environ; and, as a control, environ of a sleeper
 * of the uid (dumpable). With `stop`, it SIGSTOPs it, as a process of the uid may.
 */
const WATCHER = String.raw`
      use POSIX ();
      my ($uid, $other) = map { $_ + 0 } @ARGV[0, 1];   # numbers: syscall() takes a string as a pointer
      my $action = $ARGV[2];
      # setgroups(0), setresgid, setresuid (x86-64): the credentials ptrace compares are
      # the file-system ones, here the student's uid and gid.
      syscall(116, 0, 0) == 0 or die "setgroups: $!\n";
      syscall(119, $other, $uid, $other) == 0 or die "setresgid: $!\n";
      syscall(117, $other, $uid, $other) == 0 or die "setresuid: $!\n";
      sub status { open(my $f, '<', "/proc/$_[0]/status") or return ''; local $/; <$f> }
      sub try_open { open(my $f, '<', $_[0]) ? 'opened' : POSIX::strerror($! + 0) }
      my ($helper, $sleeper);
      syswrite(STDOUT, "ready\n");
      my $until = time + 20;
      while (!defined $helper && time < $until) {
        opendir(my $d, '/proc');
        for my $pid (grep { /^\d+$/ } readdir $d) {
          my $s = status($pid);
          next unless $s =~ /^Uid:\s+$uid\s+$uid\s+$uid\s+$uid$/m;
          if ($s =~ /^Name:\s+sleep$/m) { $sleeper = $pid; next; }
          next unless $s =~ /^Name:\s+perl$/m;
          $helper = $pid;
          if ($action eq 'stop') { kill('STOP', $pid); print "stopped\n"; last; }
          my ($groups) = $s =~ /^Groups:[ \t]*(.*)$/m;
          my @caps = map { $s =~ /^$_:\s+(\S+)$/m } qw(CapPrm CapEff CapAmb);
          my $attach = syscall(101, 16, $pid + 0, 0, 0) == 0 ? 'attached' : POSIX::strerror($! + 0);
          print join("\n", "groups=$groups", "caps=@caps", "ptrace=$attach",
            "mem=" . try_open("/proc/$pid/mem"), "environ=" . try_open("/proc/$pid/environ"),
            "sleeper=" . (defined $sleeper ? try_open("/proc/$sleeper/environ") : 'unseen')), "\n";
          last;
        }
        closedir $d;
      }
      print "none\n" unless defined $helper;`;

let ctx: Context;
const uids: number[] = [];

beforeEach(() => {
  const { dir: base, cleanup } = tempDir('reaper');
  fs.chmodSync(base, 0o755);
  ctx = { uid: testUid(), dir: studentDir(base), cleanupDir: cleanup, group: undefined, v1: undefined };
  uids.push(ctx.uid);
});

afterEach(async () => {
  try {
    for (const uid of uids.splice(0)) await killUid(uid);
  } finally {
    try {
      await ctx.group?.remove();
      await ctx.v1?.destroy();
    } finally {
      ctx.cleanupDir();
    }
  }
});

let groupCounter = 0;

/** A real @karotte/limits group with this pids.max (the limits package reads it back). */
async function useGroup(pidsMax: number): Promise<LimitGroup> {
  groupCounter += 1;
  const group = await createGroup({
    name: `karotte-test-reaper-${process.pid}-${groupCounter}`,
    pids: pidsMax,
    memoryBytes: 1024 * 1024 * 1024,
    eventPollMs: 0,
  });
  ctx.group = group;
  expect(group.limits.pids).toBe(pidsMax);
  return group;
}

interface Escape {
  readonly name: string;
  readonly script: string;
  /** Heartbeats that must all exist before the reap (the escapees are running). */
  readonly beats: readonly string[];
  /** pids.max of the pids+freezer group the escape runs in. @default DEFAULT_ESCAPE_PIDS_MAX */
  readonly pidsMax?: number;
  /** Extra readiness check. */
  readonly ready?: (context: Context) => boolean | Promise<boolean>;
}

const ESCAPES: readonly Escape[] = [
  {
    name: '`cmd &` whose shell exited',
    script: '( while :; do beat bg; sleep 0.05; done ) &\nexit 0',
    beats: ['beat.bg'],
  },
  {
    name: '`nohup` whose shell exited',
    script: "nohup bash -c 'while :; do beat nohup; sleep 0.05; done' >/dev/null 2>&1 &\nexit 0",
    beats: ['beat.nohup'],
  },
  {
    name: '`setsid` with a renamed process (`exec -a`)',
    script:
      'setsid -f bash -c \'exec -a "[kworker/0:1-events]" bash -c "while :; do beat setsid; sleep 0.05; done"\'\n' +
      'exec sleep 600',
    beats: ['beat.setsid'],
  },
  {
    name: 'double fork',
    script: "( ( exec -a karotte-df bash -c 'while :; do beat df; sleep 0.05; done' ) & )\nexec sleep 600",
    beats: ['beat.df'],
  },
  {
    name: 'fork-and-die relay that keeps re-spawning (no process lives more than a hop)',
    script: 'export relay=\'beat relay; bash -c "$relay" & exit 0\'\nbash -c "$relay" &\nexec sleep 600',
    beats: ['beat.relay'],
    // Sequential hops, but every dead hop is a zombie until this host's PID 1 reaps it (in
    // batches): the limit must leave room for those, or the chain dies of EAGAIN by itself.
    pidsMax: 1024,
    ready: (context) => {
      // The chain is alive right now: its heartbeat is rewritten.
      fs.rmSync(`${context.dir}/beat.relay`, { force: true });
      spawnSync('/bin/sleep', ['0.2']);
      return fs.existsSync(`${context.dir}/beat.relay`);
    },
  },
  {
    name: 'mutual SIGCONT ring plus a `kill -CONT -1` spammer',
    script: [
      'for i in 1 2 3 4; do',
      '  ( ( exec -a "karotte-ring$i" bash -c \'echo $$ > "$D/ring.pid.$1"; while :; do for p in $(cat "$D"/ring.pid.* 2>/dev/null); do kill -CONT "$p" 2>/dev/null; done; beat "ring$1"; sleep 0.01; done\' ring "$i" ) & )',
      'done',
      '( ( while :; do kill -CONT -1 2>/dev/null; sleep 0.001; done ) & )',
      'exec sleep 600',
    ].join('\n'),
    beats: ['beat.ring1', 'beat.ring2', 'beat.ring3', 'beat.ring4'],
    pidsMax: 64,
  },
  {
    name: 'a cohort that fills pids.max so that no new process can start',
    script: [
      // The heartbeat must not need fork (there is none to be had): a read with a timeout on
      // a FIFO opened read-write sleeps without a child process.
      'mkfifo "$D/fifo.fill"',
      '( ( exec -a karotte-beat bash -c \'exec 9<>"$D/fifo.fill"; while :; do beat fill; read -t 0.05 -u 9; done\' ) & )',
      "( ( exec -a karotte-fill bash -c 'while :; do sleep 60 & done' 2>/dev/null ) & )",
      'exec sleep 600',
    ].join('\n'),
    beats: ['beat.fill'],
    pidsMax: 24,
    ready: async (context) =>
      (await context.group!.usage()).pids >= 24 &&
      (await context.group!.events()).some((event) => event.limit === 'pids' && event.kind === 'max'),
  },
  {
    name: 'a process in a nested user + PID namespace (unshare -Ur --pid --fork)',
    script:
      "setsid -f unshare -Ur --pid --fork bash -c 'while :; do beat userns; sleep 0.05; done'\nexec sleep 600",
    beats: ['beat.userns'],
  },
  {
    name: 'zombies and stopped processes',
    script: [
      'sleep 600 & kill -STOP $!',
      "( exec -a karotte-zparent bash -c 'sleep 0.01 & exec sleep 600' ) &",
      "( exec -a karotte-zstopped bash -c 'sleep 0.01 & sleep 0.3; kill -STOP $$' ) &",
      'while :; do beat zombies; sleep 0.05; done',
    ].join('\n'),
    beats: ['beat.zombies'],
    ready: (context) => {
      const states = statesOfUid(context.uid);
      return states.includes('Z') && states.filter((state) => state === 'T').length >= 2;
    },
  },
];

/** Every escape runs inside real limits: a pids+freezer group (pids.max read back). */
const DEFAULT_ESCAPE_PIDS_MAX = 512;

async function startEscape(escape: Escape): Promise<number> {
  const group = await useGroup(escape.pidsMax ?? DEFAULT_ESCAPE_PIDS_MAX);
  const launcher = spawnStudent(ctx.uid, escape.script, { dir: ctx.dir, prefix: group.launchPrefix() });
  await waitFor(async () => {
    const present = beats(ctx.dir);
    return escape.beats.every((name) => present.includes(name)) && ((await escape.ready?.(ctx)) ?? true);
  }, 15_000);
  return launcher.pid!;
}

describe('reap() proves every escape dead', () => {
  const cases = ESCAPES.flatMap((escape) => [
    { escape, withGroup: true, title: escape.name },
    // Inside the same limits, but reap() is not told about the cgroup: the in-cohort kill and
    // the sweep alone must do it.
    { escape, withGroup: false, title: `${escape.name}, reaped by uid alone (no cgroup kill)` },
  ]);
  for (const { escape, withGroup, title } of cases) {
    it(title, async () => {
      await startEscape(escape);
      expect(pidsOfUid(ctx.uid).length).toBeGreaterThan(0);
      // The episode group, watched: how many killed members each hold kept frozen.
      const held: number[] = [];
      const episode = ctx.group!;
      const group: KillableGroup | undefined = withGroup
        ? {
            name: episode.name,
            pids: () => episode.pids(),
            killAll: async (options) => {
              const result = await episode.killAll(options);
              if (result.hold !== undefined) held.push(result.hold.members.length);
              return result;
            },
          }
        : undefined;
      const record = await reap({ uid: ctx.uid, ...(group ? { group } : {}) });
      expect(record.misbehavior).toEqual([]);
      expect(record.confirmedEmpty).toBe(true);
      expect(record.inCohort.confirmed).toBeGreaterThanOrEqual(1);
      expect(record.killed.cgroup > 0).toBe(group !== undefined);
      expect(confirmedReapRecordSchema.parse(JSON.parse(JSON.stringify(record)))).toEqual(record);
      // Confirmed: nothing can run. What was killed may still be in the kernel's exit work
      // (SIGKILL pending), and it finishes that without writing another heartbeat.
      expect(runnablePidsOfUid(ctx.uid)).toEqual([]);
      expect(await heartbeatsAfter(ctx.dir)).toEqual([]);
      expect(runnablePidsOfUid(ctx.uid)).toEqual([]);
      // A v1 group the reap held frozen while it took its proof is thawed again.
      const freezer = ctx.group?.dirs.find((dir) => fs.existsSync(`${dir}/freezer.state`));
      if (freezer !== undefined) {
        expect(fs.readFileSync(`${freezer}/freezer.state`, 'utf8').trim()).toBe('THAWED');
        // With the group, the first pass held it: its killed members were skipped, not read.
        if (withGroup) expect(held[0]).toBeGreaterThan(0);
      }
      await waitFor(() => pidsOfUid(ctx.uid).length === 0, 10_000);
      if (ctx.group) expect(await ctx.group.pids()).toEqual([]);
    });
  }
});

describe('baseline: tree-kill on the student launcher leaves survivors in the escape cases', () => {
  for (const escape of ESCAPES.filter((candidate) => candidate.name !== 'zombies and stopped processes')) {
    it(escape.name, async () => {
      const launcher = await startEscape(escape);
      await new Promise<void>((resolve) => {
        treeKill(launcher, 'SIGKILL', () => {
          resolve();
        });
      });
      await sleep(300);
      // Survival is measured by the heartbeat, not by /proc: a fork-and-die relay is alive
      // and writing while a /proc walk often sees none of its hops.
      const beatsBack = await heartbeatsAfter(ctx.dir, 500);
      expect(beatsBack.length).toBeGreaterThan(0);
      // The reaper then cleans up what tree-kill left.
      const record = await reap({ uid: ctx.uid, ...(ctx.group ? { group: ctx.group } : {}) });
      expect(record.confirmedEmpty).toBe(true);
    });
  }
});

describe('baseline: a `pkill -KILL -u` loop', () => {
  it('declares the uid empty (pgrep finds no live process) while a fork-and-die relay lives on', async () => {
    const relay = ESCAPES.find((candidate) => candidate.name.startsWith('fork-and-die relay'))!;
    await startEscape(relay);
    // Up to 3 attempts, restarting the relay if pkill happened to land on a live hop: the
    // claim is that this loop CAN report "done" with a writer alive, which a proof must not.
    let fooled = false;
    for (let attempt = 0; attempt < 3 && !fooled; attempt += 1) {
      for (let round = 0; round < 100; round += 1) {
        spawnSync('/usr/bin/pkill', ['-KILL', '-u', String(ctx.uid)]);
        if (spawnSync('/usr/bin/pgrep', ['-u', String(ctx.uid), '-r', 'R,S,D,T,t,W,P,I']).status === 1) break;
      }
      fooled = (await heartbeatsAfter(ctx.dir, 500)).length > 0;
      if (!fooled) {
        spawnStudent(ctx.uid, relay.script, { dir: ctx.dir, prefix: ctx.group!.launchPrefix() });
        await waitFor(() => beats(ctx.dir).includes('beat.relay'), 15_000);
      }
    }
    expect(fooled).toBe(true);
    const record = await reap({ uid: ctx.uid, group: ctx.group! });
    expect(record.confirmedEmpty).toBe(true);
    expect(await heartbeatsAfter(ctx.dir)).toEqual([]);
  });
});

describe('reap() details', () => {
  it('pids.max really was saturated: a process forked inside the group fails', async () => {
    const escape = ESCAPES.find((candidate) => candidate.pidsMax === 24)!;
    await startEscape(escape);
    // A root process joins the saturated group (migration is allowed) and then must fork `true`.
    const argv = [...ctx.group!.launchPrefix(), '/bin/sh', '-c', '/bin/true && echo forked'];
    const probe = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 10_000 });
    expect(probe.stdout).not.toContain('forked');
    const record = await reap({ uid: ctx.uid, group: ctx.group! });
    expect(record.confirmedEmpty).toBe(true);
    expect(record.killed.cgroup).toBeGreaterThan(0);
  });

  it('a student loop that SIGSTOPs every process of its uid (the helper too) is still reaped', async () => {
    spawnStudent(
      ctx.uid,
      "( ( exec -a karotte-stopper bash -c 'while :; do kill -STOP -1 2>/dev/null; beat stopper; done' ) & )\nexec sleep 600",
      { dir: ctx.dir },
    );
    await waitFor(() => beats(ctx.dir).includes('beat.stopper'), 15_000);
    // Whether the stopper catches the helper between its setresuid and its first kill(-1) is
    // a race (the helper usually wins). Either way the reap must prove emptiness; the bounded
    // wait on a stopped helper is tested deterministically below.
    const record = await reap({ uid: ctx.uid }, { helperTimeoutMs: 500 });
    expect(record.confirmedEmpty).toBe(true);
    expect(record.inCohort.confirmed).toBeGreaterThanOrEqual(1);
    expect(runnablePidsOfUid(ctx.uid)).toEqual([]);
    expect(await heartbeatsAfter(ctx.dir)).toEqual([]);
  });

  it('bounds the wait on a stopped helper and kills it from outside', async () => {
    const argv = [
      '/usr/bin/setpriv',
      '--reuid',
      String(ctx.uid),
      '--regid',
      String(ctx.uid),
      '--clear-groups',
      '--',
      '/bin/sh',
      '-c',
      `kill -STOP $$; ${IN_COHORT_SCRIPT}`,
      'karotte-in-cohort',
      '100',
    ];
    const started = Date.now();
    const outcome = await runHelper(argv, 300);
    expect(outcome).toEqual({ status: 'timed_out' });
    expect(Date.now() - started).toBeLessThan(6000);
    expect(pidsOfUid(ctx.uid)).toEqual([]);
  });

  it('the helper cannot be ptraced or read by the student (it holds a capability the student lacks)', async () => {
    // setpriv switches to the student's uid before it execs: in between, the kernel marks the
    // process non-dumpable (suid_dumpable), so a probe there fails whatever the capabilities
    // say. Probe only once the process runs `sleep` (comm changes inside exec, which holds the
    // lock /proc/<pid>/environ takes until the new credentials are in place).
    const execedAsStudent = (pid: number, name: string): boolean => {
      try {
        const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
        return (
          /^Name:\s+(.*)$/m.exec(status)?.[1] === name &&
          /^Uid:\s+(\d+)/m.exec(status)?.[1] === String(ctx.uid)
        );
      } catch {
        return false;
      }
    };
    // Start a long-lived process with the helper's exact privilege settings, then try, as the
    // student, what a ptrace attack needs: /proc/<pid>/environ and /proc/<pid>/mem.
    const holder = spawnSync(
      '/bin/sh',
      [
        '-c',
        '"$@" >/dev/null 2>&1 & echo $!',
        'x',
        '/usr/bin/setpriv',
        '--reuid',
        String(ctx.uid),
        '--regid',
        String(ctx.uid),
        '--clear-groups',
        '--no-new-privs',
        '--inh-caps=-all,+wake_alarm',
        '--ambient-caps=-all,+wake_alarm',
        '--',
        '/bin/sleep',
        '30',
      ],
      { encoding: 'utf8' },
    );
    const pid = Number(holder.stdout.trim());
    await waitFor(() => execedAsStudent(pid, 'sleep'));
    const probe = (file: string): number =>
      spawnSync(
        '/usr/bin/setpriv',
        [
          '--reuid',
          String(ctx.uid),
          '--regid',
          String(ctx.uid),
          '--clear-groups',
          '--',
          '/bin/sh',
          '-c',
          'exec 3< "$1"',
          'p',
          file,
        ],
        { encoding: 'utf8' },
      ).status ?? -1;
    expect(probe(`/proc/${pid}/environ`)).not.toBe(0);
    expect(probe(`/proc/${pid}/mem`)).not.toBe(0);
    // Control: the same uid CAN read a process of its own without the capability.
    const plain = spawnSync(
      '/bin/sh',
      [
        '-c',
        '"$@" >/dev/null 2>&1 & echo $!',
        'x',
        '/usr/bin/setpriv',
        '--reuid',
        String(ctx.uid),
        '--regid',
        String(ctx.uid),
        '--clear-groups',
        '--',
        '/bin/sleep',
        '30',
      ],
      { encoding: 'utf8' },
    );
    const plainPid = Number(plain.stdout.trim());
    await waitFor(() => execedAsStudent(plainPid, 'sleep'));
    expect(probe(`/proc/${plainPid}/environ`)).toBe(0);
  });

  /** The uid's one process runs `sleep`. */
  const isSleeping = (uid: number): boolean => {
    const [pid, ...more] = pidsOfUid(uid);
    if (pid === undefined || more.length > 0) return false;
    try {
      return /^Name:\s+sleep$/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    } catch {
      return false;
    }
  };

  /**
   * Run `body` while a process of the uid is frozen (SIGKILL waits for the thaw, so every
   * kill(-1) finds it and the helper makes all its rounds: a window to watch it in) and the
   * watcher looks for the helper. What the watcher printed after its `ready` line.
   */
  async function watchingHelper<T>(action: 'probe' | 'stop', body: () => Promise<T>): Promise<[T, string[]]> {
    const v1 = ctx.v1 ?? V1TestGroup.create('forked-helper');
    ctx.v1 = v1;
    const state = `${v1.freezerDir}/freezer.state`;
    await waitFor(() => statesOfUid(ctx.uid).length === 0, 10_000); // an earlier call's sleeper
    spawnStudent(ctx.uid, 'exec sleep 600', { dir: ctx.dir, prefix: v1.launchPrefix() });
    await waitFor(() => isSleeping(ctx.uid), 15_000);
    fs.writeFileSync(state, 'FROZEN');
    await waitFor(() => fs.readFileSync(state, 'utf8').trim() === 'FROZEN');
    const other = testUid();
    uids.push(other);
    const watcher = spawn('/usr/bin/perl', ['-e', WATCHER, String(ctx.uid), String(other), action], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let report = '';
    watcher.stdout.setEncoding('utf8');
    watcher.stdout.on('data', (chunk: string) => (report += chunk));
    const ended = new Promise((resolve) => watcher.on('close', resolve));
    try {
      await waitFor(() => report.startsWith('ready\n'));
      const value = await body();
      await ended;
      return [value, report.split('\n').slice(1, -1)];
    } finally {
      watcher.kill('SIGKILL');
      fs.writeFileSync(state, 'THAWED');
    }
  }

  it('the forked helper is the uid alone, and a process of the uid can neither ptrace it nor read it', async () => {
    const [result, lines] = await watchingHelper('probe', () =>
      killAsUid({ uid: ctx.uid, gid: ctx.uid, rounds: 10_000 }, { timeoutMs: 30_000 }),
    );
    expect(result).toMatchObject({ exitCode: 0, stdout: Buffer.from('10000\n') });
    const seen = Object.fromEntries(lines.map((line) => line.split('=') as [string, string]));
    // The sleeper is read the first time the watcher sees it, which may be after the helper.
    if (seen['sleeper'] === 'unseen') delete seen['sleeper'];
    expect(seen).toEqual({
      groups: '',
      caps: '0000000000000000 0000000000000000 0000000000000000',
      ptrace: 'Operation not permitted',
      mem: 'Permission denied',
      environ: 'Permission denied',
      ...(seen['sleeper'] === undefined ? {} : { sleeper: 'opened' }),
    });
  });

  it('a forked helper that a process of the uid stopped is killed from outside at its bound', async () => {
    // The watcher catches the helper in its rounds (about 0.1 s) almost always; the test takes
    // up to five tries and needs one caught. One that was not caught must have made its rounds.
    let caught = 0;
    for (let attempt = 0; attempt < 5 && caught === 0; attempt += 1) {
      const started = Date.now();
      const [outcome, lines] = await watchingHelper('stop', () =>
        runInCohort(
          { setpriv: '/usr/bin/setpriv', sh: '/bin/sh' },
          { uid: ctx.uid, gid: ctx.uid, rounds: 10_000 },
          300,
        ),
      );
      if (lines[0] === 'stopped' && outcome.status === 'timed_out') {
        caught += 1;
        expect(Date.now() - started).toBeLessThan(6000);
      } else {
        expect(outcome).toEqual({ status: 'confirmed', rounds: 10_000 });
      }
    }
    expect(caught).toBe(1);
    // Killed, not left stopped: no helper (perl) of the uid is left. The sleeper may live on: a
    // helper stopped before its first kill(-1) never signalled it (afterEach ends it).
    const helpers = (): number[] =>
      pidsOfUid(ctx.uid).filter((pid) => {
        try {
          return /^Name:\s+perl$/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
        } catch {
          return false;
        }
      });
    await waitFor(() => helpers().length === 0, 10_000);
  });

  it('reaps a PID namespace by its init alone (no uid, no group)', async () => {
    spawnStudent(
      ctx.uid,
      "exec unshare -Ur --pid --fork bash -c 'while :; do beat nsonly; sleep 0.05; done'",
      {
        dir: ctx.dir,
      },
    );
    await waitFor(() => beats(ctx.dir).includes('beat.nsonly'), 15_000);
    // The loop's short-lived `sleep`s can exit between the listing and the read: a pid that
    // vanished is not the init.
    const init = pidsOfUid(ctx.uid).find((pid) => {
      let status: string;
      try {
        status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      } catch {
        return false;
      }
      const nsPid = /^NSpid:\s+(.*)$/m.exec(status)?.[1]?.split(/\s+/);
      return nsPid !== undefined && nsPid.length === 2 && nsPid[1] === '1';
    });
    expect(init).toBeDefined();
    const record = await reap({ pidNamespaceInitPid: init! });
    expect(record).toMatchObject({ confirmedEmpty: true, killed: { pidns: 1 } });
    expect(await heartbeatsAfter(ctx.dir)).toEqual([]);
    // The namespace's parent (`unshare`, outside the namespace) exits once its child is gone
    // (when the scheduler lets it: room for a loaded machine).
    await waitFor(() => pidsOfUid(ctx.uid).length === 0, 15_000);
  });

  it('kills the nested-namespace init as a pidns kill when reaping by uid', async () => {
    await startEscape(ESCAPES.find((candidate) => candidate.name.includes('nested user'))!);
    const record = await reap({ uid: ctx.uid });
    expect(record.confirmedEmpty).toBe(true);
    expect(record.killed.pidns).toBeGreaterThanOrEqual(1);
  });

  it('zombies are not alive: they are reaped with their parents and never block confirmation', async () => {
    await startEscape(ESCAPES.find((candidate) => candidate.name === 'zombies and stopped processes')!);
    const record = await reap({ uid: ctx.uid });
    expect(record.confirmedEmpty).toBe(true);
    // The zombies go when their reparented parents' new reaper (this host's init) waits.
    await waitFor(() => statesOfUid(ctx.uid).length === 0, 15_000);
  });

  it('confirms a process that cannot act on its SIGKILL yet as dying, and it never runs again', async () => {
    // A task in a FROZEN cgroup v1 freezer cannot act on SIGKILL until it is thawed: the
    // deterministic stand-in for one the kernel is still tearing down (a large memory being
    // freed). With SIGKILL pending it never returns to user space, so it does not hold the
    // proof back; when it is let go, it dies before it runs another instruction of its own.
    const frozen = V1TestGroup.create('frozen');
    ctx.v1 = frozen;
    frozen.setPidsMax(64);
    spawnStudent(ctx.uid, 'exec -a karotte-frozen bash -c "while :; do beat frozen; sleep 0.05; done"', {
      dir: ctx.dir,
      prefix: frozen.launchPrefix(),
    });
    await waitFor(() => beats(ctx.dir).includes('beat.frozen'), 15_000);
    const state = `${frozen.freezerDir}/freezer.state`;
    fs.writeFileSync(state, 'FROZEN');
    await waitFor(() => fs.readFileSync(state, 'utf8').trim() === 'FROZEN', 5_000);
    let quiet: Promise<string[]> | undefined;
    try {
      const record = await reap({ uid: ctx.uid }, { deadlineMs: 5_000 });
      expect(record).toMatchObject({ confirmedEmpty: true, survivors: [], misbehavior: [] });
      expect(record.dying).toBeGreaterThanOrEqual(1);
      expect(pidsOfUid(ctx.uid).length).toBeGreaterThanOrEqual(1);
      expect(runnablePidsOfUid(ctx.uid)).toEqual([]);
      // Clears the heartbeats now, before the thaw, and looks again 1.5 s later.
      quiet = heartbeatsAfter(ctx.dir);
    } finally {
      fs.writeFileSync(state, 'THAWED');
    }
    await waitFor(() => pidsOfUid(ctx.uid).length === 0, 10_000);
    expect(await quiet).toEqual([]);
  });

  it('refuses to run without root at the first call (NOT_PRIVILEGED), before killing anything', async () => {
    spawnStudent(ctx.uid, 'while :; do beat alive; sleep 0.05; done', { dir: ctx.dir });
    await waitFor(() => beats(ctx.dir).includes('beat.alive'), 15_000);
    const other = testUid();
    uids.push(other);
    process.seteuid!(other);
    let error: unknown;
    try {
      await reap({ uid: ctx.uid });
    } catch (caught) {
      error = caught;
    } finally {
      process.seteuid!(0);
    }
    expect(error).toBeInstanceOf(ProcReaperError);
    expect(error).toMatchObject({ code: 'NOT_PRIVILEGED', kind: 'system' });
    expect(pidsOfUid(ctx.uid).length).toBeGreaterThan(0);
  });
});

describe('reapBestEffort() (no root needed, never confirms)', () => {
  it('kills a plain process tree and says it cannot confirm', async () => {
    const launcher = spawnStudent(
      ctx.uid,
      'sleep 600 & sleep 600 & while :; do beat tree; sleep 0.05; done',
      {
        dir: ctx.dir,
      },
    );
    await waitFor(() => beats(ctx.dir).includes('beat.tree'), 15_000);
    const record = await reapBestEffort({ pid: launcher.pid! }, { timeoutMs: 2_000 });
    expect(record).toMatchObject({ tier: 'best_effort', confirmedEmpty: false, survivorsSeen: [] });
    expect(record.misses.length).toBeGreaterThan(3);
    expect(record.killed.processGroup + record.killed.tree).toBeGreaterThanOrEqual(3);
    expect(pidsOfUid(ctx.uid)).toEqual([]);
  });

  it("never signals the caller's own process group or session", async () => {
    // Two children of this test process, in its own group and session: the target and a
    // bystander. A group or session kill would take the bystander (and this process).
    const target = spawn('/bin/sleep', ['600'], { stdio: 'ignore' });
    const bystander = spawn('/bin/sleep', ['601'], { stdio: 'ignore' });
    try {
      const record = await reapBestEffort({ pid: target.pid! }, { timeoutMs: 2_000 });
      expect(record.killed).toEqual({ processGroup: 0, tree: 1, session: 0 });
      expect(() => process.kill(bystander.pid!, 0)).not.toThrow();
      expect(bystander.exitCode).toBeNull();
    } finally {
      bystander.kill('SIGKILL');
      target.kill('SIGKILL');
    }
  });

  it('misses a setsid double-forked daemon, and its record admits it cannot see that', async () => {
    const launcher = spawnStudent(
      ctx.uid,
      'setsid -f bash -c \'exec -a karotte-daemon bash -c "while :; do beat daemon; sleep 0.05; done"\'\nexec sleep 600',
      { dir: ctx.dir },
    );
    await waitFor(() => beats(ctx.dir).includes('beat.daemon'), 15_000);
    const record = await reapBestEffort({ pid: launcher.pid! }, { timeoutMs: 1_000 });
    expect(record.confirmedEmpty).toBe(false);
    expect(record.misses.join('\n')).toMatch(/setsid/);
    expect(pidsOfUid(ctx.uid).length).toBeGreaterThan(0);
    expect((await heartbeatsAfter(ctx.dir, 500)).length).toBeGreaterThan(0);
  });

  it('works without root, as the student uid itself', async () => {
    const launcher = spawnStudent(ctx.uid, 'sleep 600 & while :; do beat self; sleep 0.05; done', {
      dir: ctx.dir,
    });
    await waitFor(() => beats(ctx.dir).includes('beat.self'), 15_000);
    process.seteuid!(ctx.uid);
    let record;
    try {
      record = await reapBestEffort({ pid: launcher.pid! }, { timeoutMs: 2_000 });
    } finally {
      process.seteuid!(0);
    }
    expect(record.confirmedEmpty).toBe(false);
    // SIGKILLed, not yet exited: each still has to be scheduled to finish its exit.
    await waitFor(() => pidsOfUid(ctx.uid).length === 0, 15_000);
  });
});
