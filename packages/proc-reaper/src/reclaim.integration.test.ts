// reclaimLeftovers() against real IPC objects and files made by a real unprivileged uid:
// SysV objects by creator (including ones whose owner the student rewrote with IPC_SET),
// POSIX message queues, files in /dev/shm. Every test removes what it made.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveTrustedBinary } from '@karotte/base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { keyringSyscalls, killUid, testUid, waitFor } from '../../../test/support/index.js';
import { removeSysvOf } from '../test/fixtures.js';
import { ProcReaperError, reclaimLeftovers, reclaimRecordSchema } from './index.js';
import { listSysvByCreator, parseSysvTable, sweepMqueues } from './ipc.js';

let uid: number;
const shmFiles: string[] = [];

beforeEach(() => {
  uid = testUid();
});

afterEach(async () => {
  await killUid(uid);
  removeSysvOf(uid);
  for (const file of shmFiles.splice(0)) fs.rmSync(file, { recursive: true, force: true });
});

/** Run a command as the student; returns stdout, throws on failure. */
function asStudent(args: string[]): string {
  const result = spawnSync(
    '/usr/bin/setpriv',
    ['--reuid', String(uid), '--regid', String(uid), '--clear-groups', '--', ...args],
    { encoding: 'utf8', timeout: 10_000, env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' } },
  );
  if (result.status !== 0) throw new Error(`as student ${args.join(' ')}: ${result.status} ${result.stderr}`);
  return result.stdout;
}

/** Sysv objects of every kind, whoever created them. */
function allSysv() {
  return (['shm', 'sem', 'msg'] as const).flatMap((kind) =>
    parseSysvTable(kind, fs.readFileSync(`/proc/sysvipc/${kind}`, 'utf8')),
  );
}

const MQUEUE_BINARIES = { perl: '/usr/bin/perl' };

/** Create a POSIX message queue: as `asUid` (or root), through a private mqueue mount. */
function createQueue(name: string, asUid: number | undefined): void {
  const mountPoint = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-mq-test-'));
  try {
    const create =
      asUid === undefined
        ? ['/bin/sh', '-c', ': > "$1/$2"', 'x']
        : [
            '/usr/bin/setpriv',
            '--reuid',
            String(asUid),
            '--regid',
            String(asUid),
            '--clear-groups',
            '--',
            '/bin/sh',
            '-c',
            ': > "$1/$2"',
            'x',
          ];
    const result = spawnSync(
      '/usr/bin/unshare',
      [
        '--mount',
        '--propagation',
        'private',
        '--',
        '/bin/sh',
        '-c',
        'mount -t mqueue karotte-test "$1" && shift 2 && "$@"',
        'x',
        mountPoint,
        '--',
        ...create,
        mountPoint,
        name,
      ],
      { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } },
    );
    if (result.status !== 0) throw new Error(`cannot create queue ${name}: ${result.stderr}`);
  } finally {
    fs.rmdirSync(mountPoint);
  }
}

/** nattch of shared-memory segment `id`, by header name. */
function attachments(id: number): number {
  const [header, ...rows] = fs.readFileSync('/proc/sysvipc/shm', 'utf8').split('\n');
  const columns = header!.trim().split(/\s+/);
  const row = rows
    .map((line) => line.trim().split(/\s+/))
    .find((fields) => fields[columns.indexOf('shmid')] === String(id));
  return Number(row?.[columns.indexOf('nattch')] ?? -1);
}

describe('reclaimLeftovers(): its sweeps together', () => {
  it('stops with ABORTED before any sweep when aborted, and then runs them all in one call', async () => {
    asStudent(['/usr/bin/ipcmk', '-Q']);
    const shmFile = `/dev/shm/karotte-reclaim-together-${uid}`;
    shmFiles.push(shmFile);
    asStudent(['/bin/sh', '-c', ': > "$1"', 'x', shmFile]);
    const aborted = AbortSignal.abort(new Error('the harness is stopping'));
    await expect(reclaimLeftovers(uid, { abortSignal: aborted })).rejects.toMatchObject({ code: 'ABORTED' });
    // Nothing was swept: the queue and the file are still there.
    expect(listSysvByCreator(uid).map((object) => object.kind)).toEqual(['msg']);
    expect(fs.existsSync(shmFile)).toBe(true);
    const record = await reclaimLeftovers(uid);
    expect(record.sysv).toEqual({ removed: { shm: 0, sem: 0, msg: 1 }, pendingDestroy: 0, left: [] });
    expect(record.ramFiles).toMatchObject({ removed: 1, failed: 0, complete: true });
    expect(record.posixMqueues).toEqual({ removed: [], removedCount: 0, left: [] });
    expect(record.keys).toMatchObject({ failed: [], left: 0 });
    expect(record).toMatchObject({ complete: true, misbehavior: [] });
    expect(listSysvByCreator(uid)).toEqual([]);
    expect(fs.existsSync(shmFile)).toBe(false);
  });
});

describe('reclaimLeftovers(): SysV IPC by creator', () => {
  it('removes shared memory, semaphores and message queues the student made with ipcmk', async () => {
    asStudent(['/usr/bin/ipcmk', '-M', '4096']);
    asStudent(['/usr/bin/ipcmk', '-S', '2']);
    asStudent(['/usr/bin/ipcmk', '-Q']);
    expect(
      listSysvByCreator(uid)
        .map((object) => object.kind)
        .sort(),
    ).toEqual(['msg', 'sem', 'shm']);
    const record = await reclaimLeftovers(uid, { posixMqueues: false, ramFiles: false });
    expect(record.sysv).toEqual({ removed: { shm: 1, sem: 1, msg: 1 }, pendingDestroy: 0, left: [] });
    expect(record).toMatchObject({ complete: true, misbehavior: [], posixMqueues: null, ramFiles: null });
    expect(listSysvByCreator(uid)).toEqual([]);
  });

  it('removes objects whose owner the student gave to root or another uid (IPC_SET)', async () => {
    const other = testUid();
    // Perl's core IPC::SysV calls shmctl/semctl/msgctl(IPC_SET) for us (no compiler needed).
    asStudent([
      '/usr/bin/perl',
      '-e',
      [
        'use IPC::SysV qw(IPC_PRIVATE IPC_CREAT IPC_STAT IPC_SET S_IRWXU);',
        'use IPC::SharedMem; use IPC::Semaphore; use IPC::Msg;',
        'my $id = shmget(IPC_PRIVATE, 4096, S_IRWXU) // die "shmget $!";',
        'my $buf = ""; shmctl($id, IPC_STAT, $buf) or die "stat $!";',
        'my $ds = "IPC::SharedMem::stat"->new->unpack($buf); $ds->uid(0);',
        'shmctl($id, IPC_SET, $ds->pack) or die "set shm $!";',
        // set() returns 0 ("0 but true" numified) on success: test definedness.
        'defined(IPC::Semaphore->new(IPC_PRIVATE, 1, S_IRWXU|IPC_CREAT)->set(uid => $ARGV[0])) or die "sem $!";',
        'defined(IPC::Msg->new(IPC_PRIVATE, S_IRWXU|IPC_CREAT)->set(uid => 0)) or die "msg $!";',
      ].join(' '),
      String(other),
    ]);
    const mine = listSysvByCreator(uid);
    expect(mine).toHaveLength(3);
    // The attack worked: by OWNER, nothing belongs to the student any more.
    expect(allSysv().filter((object) => object.uid === uid)).toEqual([]);
    expect(mine.map((object) => object.uid).sort()).toEqual([0, 0, other].sort());
    const record = await reclaimLeftovers(uid, { posixMqueues: false, ramFiles: false });
    expect(record.sysv?.removed).toEqual({ shm: 1, sem: 1, msg: 1 });
    expect(record.complete).toBe(true);
    expect(listSysvByCreator(uid)).toEqual([]);
  });

  it('reports a removed segment still attached elsewhere as pendingDestroy, freed at the last detach', async () => {
    const id = Number(/(\d+)\s*$/.exec(asStudent(['/usr/bin/ipcmk', '-M', '4096']).trim())?.[1]);
    // A root process (not the student's) keeps it attached.
    const holder = spawn(
      '/usr/bin/perl',
      ['-e', 'use IPC::SysV qw(shmat); shmat($ARGV[0], undef, 0) // die; sleep 20', String(id)],
      {
        stdio: 'ignore',
      },
    );
    const exited = new Promise((resolve) => holder.once('exit', resolve));
    try {
      await waitFor(() => attachments(id) === 1);
      const record = await reclaimLeftovers(uid, { posixMqueues: false, ramFiles: false });
      expect(record.sysv).toEqual({ removed: { shm: 1, sem: 0, msg: 0 }, pendingDestroy: 1, left: [] });
      expect(record.complete).toBe(true);
    } finally {
      holder.kill('SIGKILL');
    }
    // The holder's exit detaches it, and the last detach destroys the segment. Wait for the
    // exit itself, then (bounded) for the detach: another process reading the holder's /proc
    // files at that moment can delay the release of its memory past the exit.
    await exited;
    await waitFor(() => listSysvByCreator(uid).length === 0, 10_000);
  });

  it('leaves objects created by other uids alone', async () => {
    const other = testUid();
    try {
      spawnSync('/usr/bin/setpriv', [
        '--reuid',
        String(other),
        '--regid',
        String(other),
        '--clear-groups',
        '--',
        '/usr/bin/ipcmk',
        '-M',
        '4096',
      ]);
      asStudent(['/usr/bin/ipcmk', '-M', '4096']);
      await reclaimLeftovers(uid, { posixMqueues: false, ramFiles: false });
      expect(listSysvByCreator(uid)).toEqual([]);
      expect(listSysvByCreator(other)).toHaveLength(1);
    } finally {
      removeSysvOf(other);
    }
  });
});

describe('reclaimLeftovers(): POSIX message queues', () => {
  it('removes the queues the student owns and keeps root-owned ones', async () => {
    const studentQueue = `karotte-test-q-${uid}`;
    const rootQueue = `karotte-test-rootq-${uid}`;
    createQueue(studentQueue, uid);
    createQueue(rootQueue, undefined);
    try {
      const record = await reclaimLeftovers(uid, { sysv: false, ramFiles: false });
      expect(record.posixMqueues).toEqual({ removed: [studentQueue], removedCount: 1, left: [] });
      // Listed again (through a fresh private mount): the student's is gone, root's is there.
      const again = await sweepMqueues(MQUEUE_BINARIES, uid, 10_000);
      expect(again).toEqual({ removed: [], left: [] });
      // The mqueue mounts were made in the sweeps' own mount namespaces: the host never saw one.
      expect(fs.readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain('karotte-mqueue');
      const rootView = await sweepMqueues(MQUEUE_BINARIES, 0, 10_000);
      expect(rootView.removed.map(String)).toContain(rootQueue);
    } finally {
      // sweepMqueues(…, 0, …) above already removed root's test queue; make sure.
      await sweepMqueues(MQUEUE_BINARIES, 0, 10_000).catch(() => undefined);
    }
  });
});

describe('reclaimLeftovers(): RAM-backed files (through file-guard)', () => {
  it("removes the student's files in /dev/shm, keeps root's, and finds /dev/shm by itself", async () => {
    const studentFile = `/dev/shm/karotte-test-${uid}-file`;
    const studentDir = `/dev/shm/karotte-test-${uid}-dir`;
    const rootFile = `/dev/shm/karotte-test-${uid}-root`;
    shmFiles.push(studentFile, studentDir, rootFile);
    asStudent([
      '/bin/sh',
      '-c',
      'head -c 65536 /dev/zero > "$1" && mkdir "$2" && : > "$2/inner" && ln -s /etc/passwd "$2/link"',
      'x',
      studentFile,
      studentDir,
    ]);
    fs.writeFileSync(rootFile, 'root');
    const record = await reclaimLeftovers(uid, { sysv: false, posixMqueues: false });
    expect(record.ramFiles?.roots).toContain('/dev/shm');
    expect(record.ramFiles).toMatchObject({ complete: true, failed: 0, timedOut: false });
    expect(record.ramFiles!.removed).toBeGreaterThanOrEqual(4);
    expect(fs.existsSync(studentFile)).toBe(false);
    expect(fs.existsSync(studentDir)).toBe(false);
    expect(fs.readFileSync(rootFile, 'utf8')).toBe('root');
    expect(fs.existsSync('/etc/passwd')).toBe(true);
    expect(reclaimRecordSchema.parse(JSON.parse(JSON.stringify(record)))).toEqual(record);
  });

  it("leaves alone a RAM mount the uid could never enter (another uid's, mode 0700): not walked, not held", async () => {
    // A score tmpfs as the grader makes one: owned by another uid, closed to everyone else.
    const other = uid + 1;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-reclaim-closed-'));
    const mountBin = resolveTrustedBinary('mount');
    const mount = spawnSync(mountBin, [
      '-t',
      'tmpfs',
      '-o',
      `size=1m,mode=0700,uid=${other}`,
      'karotte-reclaim-closed',
      dir,
    ]);
    expect(mount.status, String(mount.stderr)).toBe(0);
    try {
      // Planted by root in the uid's name: were the mount walked, this file would go.
      const planted = path.join(dir, 'karotte-planted');
      fs.writeFileSync(planted, 'x');
      fs.chownSync(planted, uid, uid);
      const closed = await reclaimLeftovers(uid, { sysv: false, posixMqueues: false, keys: false });
      expect(closed.ramFiles?.roots).toContain('/dev/shm');
      expect(closed.ramFiles?.roots).not.toContain(dir);
      expect(fs.existsSync(planted)).toBe(true);
      // The same mount opened to others (mode 1777): walked, and the file goes.
      fs.chmodSync(dir, 0o1777);
      const open = await reclaimLeftovers(uid, { sysv: false, posixMqueues: false, keys: false });
      expect(open.ramFiles?.roots).toContain(dir);
      expect(fs.existsSync(planted)).toBe(false);
    } finally {
      // Once open to others, other tests' reclaims may walk it and hold it a moment: retry a
      // busy unmount, then detach it (never left mounted), and say so.
      const umount = resolveTrustedBinary('umount');
      let unmounted = false;
      for (let i = 0; i < 60 && !unmounted; i += 1) {
        unmounted = spawnSync(umount, [dir]).status === 0;
        if (!unmounted) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      if (!unmounted) spawnSync(umount, ['-l', dir]);
      fs.rmSync(dir, { recursive: true, force: true });
      expect(unmounted, `unmount ${dir}`).toBe(true);
    }
  });
});

describe('reclaimLeftovers(): everything at once, and caller errors', () => {
  it('reclaims SysV objects, a queue and a RAM file in one call', async () => {
    asStudent(['/usr/bin/ipcmk', '-M', '4096']);
    createQueue(`karotte-test-all-${uid}`, uid);
    const file = `/dev/shm/karotte-test-${uid}-all`;
    shmFiles.push(file);
    asStudent(['/bin/sh', '-c', ': > "$1"', 'x', file]);
    const record = await reclaimLeftovers(uid, { ramFileRoots: ['/dev/shm'] });
    expect(record).toMatchObject({
      complete: true,
      misbehavior: [],
      sysv: { removed: { shm: 1, sem: 0, msg: 0 } },
      posixMqueues: { removedCount: 1 },
      ramFiles: { roots: ['/dev/shm'], removed: 1 },
    });
  });

  describe('kernel keys', () => {
    // The keyring calls through perl's syscall(), numbered for this architecture (the
    // default syscall filter refuses them inside a sandbox, a task can loosen it by name).
    const { addKey, keyctl } = keyringSyscalls();
    const plant = String.raw`
      my ($ring, $desc, $data, $open) = @ARGV;
      my $type = 'user';
      my $key = syscall(${addKey}, $type, $desc, $data, length($data), $ring + 0);
      die "add_key: $!\n" if $key < 0;
      # possessor and owner all, others view and read: readable by any uid that knows the serial
      if ($open) { syscall(${keyctl}, 5, $key, 0x3f3f0003) == 0 or die "setperm: $!\n"; }
      print $key;`;
    const persistentRing = String.raw`
      my $p = syscall(${keyctl}, 22, -1, -4);
      die "get_persistent: $!\n" if $p < 0;
      print $p;`;
    const read = String.raw`
      my $buf = "\0" x 64;
      my $n = syscall(${keyctl}, 11, $ARGV[0] + 0, $buf, 64);
      print $n >= 0 ? substr($buf, 0, $n) : "refused: $!";`;
    const perlAs = (asUid: number, program: string, args: string[]): string => {
      const result = spawnSync(
        '/usr/bin/setpriv',
        [
          '--reuid',
          String(asUid),
          '--regid',
          String(asUid),
          '--clear-groups',
          '--',
          '/usr/bin/perl',
          '-e',
          program,
          '--',
          ...args,
        ],
        { encoding: 'utf8', timeout: 10_000, env: {} },
      );
      if (result.status !== 0) throw new Error(`perl as ${asUid}: ${result.status} ${result.stderr}`);
      return result.stdout;
    };
    const keysOf = (who: number): number => {
      const line = fs
        .readFileSync('/proc/key-users', 'utf8')
        .split('\n')
        .find((l) => l.trim().startsWith(`${who}:`));
      return line === undefined ? 0 : Number(/\s(\d+)\//.exec(line)![1]);
    };

    it('runs nothing for a uid that owns no key', async () => {
      expect(keysOf(uid)).toBe(0);
      const record = await reclaimLeftovers(uid, { sysv: false, posixMqueues: false, ramFiles: false });
      expect(record.keys).toEqual({ cleared: [], failed: [], left: 0 });
      expect(keysOf(uid)).toBe(0);
    });

    it('destroys the keys the student linked into its user and persistent keyrings, readable by another uid before', async () => {
      const reader = testUid();
      try {
        const inUser = perlAs(uid, plant, ['-4', 'karotte-answer-user', 'answer-42', '1']);
        const persistent = perlAs(uid, persistentRing, []);
        const inPersistent = perlAs(uid, plant, [persistent, 'karotte-answer-persistent', 'answer-43', '1']);
        // The channel is real: a later episode under another uid reads both by serial.
        expect(perlAs(reader, read, [inUser])).toBe('answer-42');
        expect(perlAs(reader, read, [inPersistent])).toBe('answer-43');

        const record = await reclaimLeftovers(uid, { sysv: false, posixMqueues: false, ramFiles: false });
        expect(record.keys).toEqual({
          cleared: ['user', 'user-session', 'persistent'],
          failed: [],
          left: 0,
        });
        expect(record.complete).toBe(true);
        expect(reclaimRecordSchema.parse(record)).toEqual(record);
        expect(perlAs(reader, read, [inUser])).toMatch(/^refused: /);
        expect(perlAs(reader, read, [inPersistent])).toMatch(/^refused: /);
      } finally {
        await killUid(reader);
        await reclaimLeftovers(reader, { sysv: false, posixMqueues: false, ramFiles: false });
      }
    });

    it("reports a key it cannot reach (linked from another uid's keyring) as UNRECLAIMABLE", async () => {
      const neighbour = testUid();
      try {
        // The neighbour's keyring lets anyone link into it; the student hides a key there.
        const ring = perlAs(
          neighbour,
          String.raw`
              my ($t, $d) = ('keyring', 'karotte-open-ring');
              my $r = syscall(${addKey}, $t, $d, 0, 0, -4);
              die "add_key: $!\n" if $r < 0;
              syscall(${keyctl}, 5, $r, 0x3f3f003f) == 0 or die "setperm: $!\n";
              print $r;`,
          [],
        );
        perlAs(uid, plant, [ring, 'karotte-hidden', 'answer-44', '']);
        const record = await reclaimLeftovers(uid, { sysv: false, posixMqueues: false, ramFiles: false });
        expect(record.keys).toMatchObject({ left: 1 });
        expect(record.complete).toBe(false);
        expect(record.misbehavior).toEqual([
          expect.objectContaining({
            code: 'UNRECLAIMABLE',
            message: expect.stringMatching(/1 kernel key\(s\) of uid/),
          }),
        ]);
      } finally {
        await killUid(neighbour);
        await reclaimLeftovers(neighbour, { sysv: false, posixMqueues: false, ramFiles: false });
        await reclaimLeftovers(uid, { sysv: false, posixMqueues: false, ramFiles: false });
      }
    });
  });

  it('refuses uid 0, a system uid, and a caller without root', async () => {
    await expect(reclaimLeftovers(0)).rejects.toMatchObject({ name: 'BadArgumentError', field: 'uid' });
    await expect(reclaimLeftovers(100)).rejects.toMatchObject({ name: 'BadArgumentError', field: 'uid' });
    process.seteuid!(uid);
    let error: unknown;
    try {
      await reclaimLeftovers(uid);
    } catch (caught) {
      error = caught;
    } finally {
      process.seteuid!(0);
    }
    expect(error).toBeInstanceOf(ProcReaperError);
    expect(error).toMatchObject({ code: 'NOT_PRIVILEGED' });
  });
});
