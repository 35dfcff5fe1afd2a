// Attacks from inside a real sandbox, as the student: every assertion is what the student saw.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { hostViewHidden } from './confinement/plan.js';
import { createSandbox, type Sandbox } from './index.js';
import { pidsOfUid, waitFor } from '../../../test/support/index.js';

let box: Sandbox;
let visibleDir: string;
let taskDir: string;
/** What the host view covered when the box was made (later top-level dirs wait for a rebuild). */
let coveredAtCreation: string[];
const SECRET = `karotte-secret-${process.pid}`;

beforeAll(async () => {
  // A root-only task directory (hidden AND 0700) and a dir the student can see (read-only view;
  // under /var/cache: the default host view covers /var/tmp).
  taskDir = fs.mkdtempSync('/var/tmp/karotte-task-');
  fs.chmodSync(taskDir, 0o700);
  fs.writeFileSync(path.join(taskDir, 'answer.txt'), SECRET);
  visibleDir = fs.mkdtempSync('/var/cache/karotte-visible-');
  fs.chmodSync(visibleDir, 0o755);
  fs.writeFileSync(path.join(visibleDir, 'root-only.txt'), SECRET, { mode: 0o600 });
  // A hidden FILE in a visible directory: its cover (a bind of an empty file) sorts after
  // /run/karotte, whose cover would hide that empty file if directories went first.
  fs.writeFileSync(path.join(visibleDir, 'zz-hidden.txt'), SECRET, { mode: 0o644 });
  // A root-owned setuid copy of `id`: the mount is nosuid and no_new_privs is set, so it gives nothing.
  fs.copyFileSync('/usr/bin/id', path.join(visibleDir, 'id-suid'));
  fs.chmodSync(path.join(visibleDir, 'id-suid'), 0o4755);
  process.env['KAROTTE_TEST_HARNESS_SECRET'] = SECRET;
  coveredAtCreation = hostViewHidden('system');
  box = await createSandbox({
    hiddenPaths: [taskDir, path.join(visibleDir, 'zz-hidden.txt')],
    limits: {
      diskBytes: 16 * MiB,
      memoryBytes: 192 * MiB,
      pids: 96,
      tmpBytes: 8 * MiB,
      shmBytes: 4 * MiB,
    },
    env: { TASK_HINT: 'hello', LD_PRELOAD: '/tmp/evil.so', PATH: '/tmp:/usr/bin:/bin' },
    commandTimeoutMs: 20_000,
  });
}, 120_000);

afterAll(async () => {
  delete process.env['KAROTTE_TEST_HARNESS_SECRET'];
  const uid = box?.uid;
  await box?.destroy();
  if (uid !== undefined) expect(pidsOfUid(uid)).toEqual([]);
  fs.rmSync(taskDir, { recursive: true, force: true });
  fs.rmSync(visibleDir, { recursive: true, force: true });
});

describe('the student cannot read what it must not', () => {
  it('reading the hidden task directory and a root-only file fails', async () => {
    const hidden = await box.exec(`cat ${taskDir}/answer.txt; ls -la ${taskDir}`);
    expect(hidden.stdout).not.toContain(SECRET);
    expect(hidden.exitCode).not.toBe(0);
    const rootOnly = await box.exec(`cat ${visibleDir}/root-only.txt`);
    expect(rootOnly.stderr).toContain('Permission denied');
    expect(rootOnly.stdout).not.toContain(SECRET);
    expect(await box.files.view({ path: `${visibleDir}/root-only.txt` })).toMatchObject({
      ok: false,
      code: 'EACCES',
    });
    expect(await box.files.view({ path: `${taskDir}/answer.txt` })).toMatchObject({ ok: false });
    const search = await box.exec(
      `timeout 10 grep -rs ${SECRET} /var /etc /run /root /home /tmp 2>/dev/null | head -3`,
    );
    expect(search.stdout).toBe('');
  });

  it('a hidden file is covered (its cover sorts after /run/karotte, and setup still succeeds)', async () => {
    const read = await box.exec(`cat ${visibleDir}/zz-hidden.txt 2>&1; echo end`);
    expect(read.stdout).toContain('end');
    expect(read.stdout).not.toContain(SECRET);
  });

  it('karotte state, /root and the quota images are covered', async () => {
    const result = await box.exec('ls -A /run/karotte /var/lib/karotte /root 2>&1; echo end');
    expect(result.stdout).not.toMatch(/sandbox|images|groups|\.img/);
    expect(result.stdout).toContain('end');
  });

  it('sees only the system part of the host: other top-level directories and /var/tmp are empty', async () => {
    // Every top-level entry outside SYSTEM_ROOTS on this host (a checkout under /work, /srv,
    // /mnt, ...) and /var/tmp (where this test's own task directory lives) list as empty.
    const hidden = coveredAtCreation.filter((p) => fs.existsSync(p) && fs.statSync(p).isDirectory());
    expect(hidden).toContain('/var/tmp');
    const listed = await box.exec(
      `for d in ${hidden.join(' ')}; do echo "$d:$(ls -A "$d" 2>/dev/null | wc -l)"; done`,
    );
    expect(listed.stdout.trim().split('\n')).toEqual(hidden.map((d) => `${d}:0`));
    // The system part still works.
    expect((await box.exec('ls /usr/bin/bash /etc/passwd && echo ok')).stdout).toContain('ok');
  });

  it('sees only its own processes; the harness argv and environment are unreachable', async () => {
    const ps = await box.exec('ps -eo pid,user,args --no-headers');
    expect(ps.stdout).not.toMatch(/vitest|node/);
    for (const line of ps.stdout.trim().split('\n'))
      expect(Number(line.trim().split(/\s+/)[0])).toBeLessThan(1000);
    const environ = await box.exec('cat /proc/1/environ');
    expect(environ.exitCode).not.toBe(0);
    expect(environ.stderr).toContain('Permission denied');
    // The pattern is written so that grep's own argv does not match it.
    const pattern = SECRET.replace('karotte-secret', 'karotte-secre[t]');
    const all = await box.exec(
      `cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -c '${pattern}' || true`,
    );
    expect(all.stdout.trim()).toBe('0');
    const env = await box.exec('env');
    expect(env.stdout).not.toContain(SECRET);
    expect(env.stdout).toContain('TASK_HINT=hello');
    expect(env.stdout).not.toContain('LD_PRELOAD');
    expect(env.stdout).toMatch(/^PATH=\/usr\/bin:\/bin$/m);
    expect(box.envRemovals.map((removal) => removal.name)).toEqual(
      expect.arrayContaining(['LD_PRELOAD', 'PATH']),
    );
  });

  it('has its own hostname, IPC and network namespaces', async () => {
    const host = fs.readlinkSync('/proc/self/ns/net');
    const inside = await box.exec(
      'hostname; readlink /proc/self/ns/net /proc/self/ns/ipc /proc/self/ns/uts /proc/self/ns/mnt /proc/self/ns/pid',
    );
    expect(inside.stdout).toContain('karotte-');
    expect(inside.stdout).not.toContain(host);
    expect(inside.stdout).not.toContain(fs.readlinkSync('/proc/self/ns/ipc'));
    expect(inside.stdout).not.toContain(fs.readlinkSync('/proc/self/ns/mnt'));
    expect(inside.stdout).not.toContain(fs.readlinkSync('/proc/self/ns/pid'));
  });

  it('sees a read-only /sys of its own network namespace: no host interfaces, no cgroup files', async () => {
    const hostInterfaces = fs.readdirSync('/sys/class/net').filter((name) => name !== 'lo');
    expect(hostInterfaces.length).toBeGreaterThan(0);
    const sys = await box.exec('ls /sys/class/net; ls -A /sys/fs/cgroup | wc -l; touch /sys/x 2>&1; echo $?');
    expect(sys.stdout).toMatch(/^lo\n0\n.*Read-only file system\n1\n$/s);
  });
});

describe('no privilege', () => {
  it('runs with no capabilities, no_new_privs, no groups, core dumps off and oom_score_adj 1000', async () => {
    const status = await box.exec(
      'grep -E "^(Uid|Gid|Groups|Cap...|NoNewPrivs):" /proc/self/status; cat /proc/self/oom_score_adj; ulimit -c',
    );
    const uid = String(box.uid);
    expect(status.stdout).toContain(`Uid:\t${uid}\t${uid}\t${uid}\t${uid}`);
    expect(status.stdout).toMatch(/^Groups:\s*$/m);
    for (const cap of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
      expect(status.stdout).toContain(`${cap}:\t0000000000000000`);
    }
    expect(status.stdout).toContain('NoNewPrivs:\t1');
    expect(status.stdout).toMatch(/\n1000\n0\n$/);
  });

  it('setuid binaries give no privilege', async () => {
    const suid = await box.exec(`${visibleDir}/id-suid -u; su -c id root </dev/null; echo su=$?`);
    expect(suid.stdout.split('\n')[0]).toBe(String(box.uid));
    expect(suid.stdout).toMatch(/su=[1-9]/);
  });

  it('cannot write outside the working directory, /tmp and /dev/shm', async () => {
    const outside = await box.exec(
      `for p in /var/tmp/x /etc/x /x /usr/local/x ${visibleDir}/x /home/x /run/x /dev/x; do touch $p 2>/dev/null && echo wrote $p; done; echo done`,
    );
    expect(outside.stdout).toBe('done\n');
    const inside = await box.exec('touch ~/a /tmp/b /dev/shm/c && echo ok');
    expect(inside.stdout).toBe('ok\n');
    expect(fs.existsSync(path.join(box.workDir, 'a'))).toBe(true);
  });
});

describe('no network', () => {
  it('the check before the first step passed, with a loopback control', () => {
    expect(box.networkCheck.ok).toBe(true);
    expect(box.networkCheck.loopback.ipv4).toBe(true);
    const labels = box.networkCheck.probes.map((probe) => probe.label);
    expect(labels).toEqual(
      expect.arrayContaining(['public-ipv4', 'public-ipv6', 'metadata', 'private-10/8', 'host-address']),
    );
    for (const probe of box.networkCheck.probes) expect(probe.observed).toBe('blocked');
  });

  it('raw TCP, UDP, DNS and curl to the outside fail (no route: no packet leaves)', async () => {
    const result = await box.exec(
      [
        'exec 3<>/dev/tcp/1.1.1.1/80 && echo tcp-open',
        'exec 4<>/dev/udp/8.8.8.8/53 && echo udp-open',
        'getent hosts example.com && echo dns-ok',
        'command -v curl >/dev/null && { curl -sS --max-time 5 http://1.1.1.1/ && echo curl-ok; }',
        'echo done',
      ].join('; '),
    );
    expect(result.stdout).toBe('done\n');
    expect(result.stderr).toContain('Network is unreachable');
  });
});

describe('limits hit inside the sandbox, the harness lives', () => {
  it('limits were read back before the test', () => {
    expect(box.appliedLimits.pids).toBe(96);
    expect(box.appliedLimits.memoryBytes).toBeLessThanOrEqual(192 * MiB);
    expect(box.appliedLimits.diskBytes).toBeLessThanOrEqual(16 * MiB);
  });

  it('a memory hog is killed by the memory limit', async () => {
    const hog = await box.exec('head -c 1G /dev/zero | tail > /dev/null; echo status=$?');
    expect(hog.stdout).toMatch(/status=(137|141)/);
    expect((await box.exec('echo alive')).stdout).toBe('alive\n');
  });

  it('a disk fill stops at the quota', async () => {
    const fill = await box.exec('head -c 64M /dev/zero > ~/fill; echo status=$?; rm -f ~/fill');
    expect(fill.stderr).toContain('No space left on device');
    expect(fill.stdout).not.toContain('status=0');
  });
});

describe('the persistent shell', () => {
  it('keeps cd and export, and gives commands /dev/null as stdin', async () => {
    await box.exec('mkdir -p ~/sub && cd ~/sub && export KEPT=yes');
    expect((await box.exec('pwd; echo $KEPT; cat; read x; echo "[$x]"')).stdout).toBe(
      '/home/student/sub\nyes\n[]\n',
    );
    await box.exec('cd ~');
  });

  it('a sleep infinity is stopped by the timeout; background jobs of earlier commands survive', async () => {
    await box.exec('sleep 300 & echo $! > ~/bg.pid');
    // The timeout kills what the command started by then: it must leave a loaded machine time
    // to fork `sleep` first (one forked after the kill keeps the shell busy, and the shell is
    // replaced: restarted, which is not what this test is about).
    const stuck = await box.exec('sleep infinity', { timeoutMs: 3000 });
    expect(stuck).toMatchObject({ timedOut: true, exitCode: null, restarted: false });
    expect((await box.exec('kill -0 $(cat ~/bg.pid) && echo bg-alive')).stdout).toBe('bg-alive\n');
    await box.exec('kill $(cat ~/bg.pid)');
  });

  /** Command lines of the sandbox's processes now. */
  function commandLines(): string[] {
    return pidsOfUid(box.uid).map((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      } catch {
        return '';
      }
    });
  }

  it('what the shell forks after the timeout killed the first process is killed too', async () => {
    // At the timeout `sleep 5` is killed; the shell then spins 0.7 s in builtins (no process
    // to find) and forks `sleep 600` well after the kill pass, inside the shell's grace
    // period. It must not outlive the command as an orphan.
    const result = await box.exec(
      'sleep 5; t=${EPOCHREALTIME/./}; while (( ${EPOCHREALTIME/./} - t < 700000 )); do :; done; sleep 600',
      { timeoutMs: 500 },
    );
    expect(result.timedOut).toBe(true);
    expect(commandLines()).not.toContain('sleep 600');
  });

  it("a timeout spares what an earlier command's background job forks meanwhile", async () => {
    // The job forks `sleep 601` once the next command has started (it drops the trigger):
    // the job's work, not the command's.
    await box.exec('rm -f ~/go; (while [ ! -e ~/go ]; do sleep 0.05; done; sleep 601) & echo $! > ~/job.pid');
    const result = await box.exec('touch ~/go; sleep 5', { timeoutMs: 1500 });
    expect(result.timedOut).toBe(true);
    // On a loaded machine the job may notice the trigger late: wait for its fork (bounded).
    await waitFor(() => commandLines().includes('sleep 601'), 10_000);
    await box.exec('pkill -P $(cat ~/job.pid); kill $(cat ~/job.pid)');
  });

  it('a busy builtin loop is stopped by restarting the shell', async () => {
    const loop = await box.exec('while :; do :; done', { timeoutMs: 300 });
    expect(loop).toMatchObject({ timedOut: true, restarted: true });
    expect((await box.exec('echo fresh')).stdout).toBe('fresh\n');
  });

  it('an AbortSignal stops a command', async () => {
    const controller = new AbortController();
    setTimeout(() => {
      controller.abort();
    }, 200);
    const result = await box.exec('sleep 30', { abortSignal: controller.signal });
    expect(result).toMatchObject({ aborted: true, timedOut: false, exitCode: null });
  });

  it('exec >/dev/null, fake markers and closed fds do not fool or wedge it', async () => {
    expect((await box.exec('exec >/dev/null 2>&1; echo hidden')).stdout).toBe('');
    expect((await box.exec('echo visible')).stdout).toBe('visible\n');
    const fake = await box.exec(
      "printf 'E 0\\nM 00000000000000000000000000000000\\n'; echo 'E 0' >&4; echo real; exit_code=7; (exit 7)",
    );
    expect(fake.stdout).toContain('real');
    expect(fake.exitCode).toBe(7);
    expect(fake.restarted).toBe(false);
    const closed = await box.exec('exec 1>&- 2>&-; echo gone');
    expect(closed.exitCode).toBe(1);
    expect((await box.exec('echo back')).stdout).toBe('back\n');
  });

  it('exit restarts the shell and tells the student', async () => {
    const exited = await box.exec('exit 3');
    expect(exited).toMatchObject({ exitCode: 3, restarted: true });
    expect(exited.notice).toContain('exited with status 3');
    expect((await box.exec('pwd')).stdout).toBe('/home/student\n');
  });

  it('caps output, keeping head and tail and the total size', async () => {
    const flood = await box.exec("head -c 5000000 /dev/zero | tr '\\0' a; echo DONE");
    expect(flood.stdoutTruncated).toBe(true);
    expect(flood.stdoutBytes).toBe(5_000_005);
    expect(flood.stdout.endsWith('DONE\n')).toBe(true);
    expect(flood.stdout).toContain('bytes of output truncated');
    expect(flood.stdout.length).toBeLessThan(20_000);
  });
});

describe('file tools act as the student', () => {
  it('refuse FIFOs without blocking and never follow a link as root', async () => {
    await box.exec(`mkfifo ~/pipe; ln -s ${visibleDir}/root-only.txt ~/link; ln -s /etc/shadow ~/shadow`);
    expect(await box.files.view({ path: 'pipe', timeoutMs: 5000 })).toMatchObject({
      ok: false,
      code: 'NOT_REGULAR_FILE',
    });
    expect(await box.files.view({ path: 'link' })).toMatchObject({ ok: false, code: 'EACCES' });
    expect(await box.files.view({ path: 'shadow' })).toMatchObject({ ok: false, code: 'EACCES' });
    expect(await box.files.write({ path: '/etc/passwd', content: 'x' })).toMatchObject({ ok: false });
    expect(await box.files.view({ path: '/dev/zero' })).toMatchObject({
      ok: false,
      code: 'NOT_REGULAR_FILE',
    });
  });

  it('view, replace and list with line ranges and caps', async () => {
    await box.files.write({
      path: 'lines.txt',
      content: Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join('\n'),
    });
    expect(await box.files.view({ path: 'lines.txt', startLine: 49 })).toMatchObject({
      ok: true,
      content: 'line 49\nline 50',
      totalLines: 50,
      endLine: 50,
    });
    expect(await box.files.view({ path: 'lines.txt', startLine: 1, maxBytes: 14 })).toMatchObject({
      ok: true,
      content: 'line 1\nline 2\n',
      truncated: true,
      endLine: 2,
    });
    expect(await box.files.replace({ path: 'lines.txt', oldText: 'line', newText: 'x' })).toMatchObject({
      ok: false,
      code: 'AMBIGUOUS',
    });
    expect(await box.files.replace({ path: 'lines.txt', oldText: 'line 50', newText: 'last' })).toMatchObject(
      { ok: true, replacements: 1 },
    );
    const list = await box.files.list({ path: '.' });
    expect(list.ok && list.entries.some((entry) => entry.name === 'lines.txt' && entry.type === 'file')).toBe(
      true,
    );
  });
});
