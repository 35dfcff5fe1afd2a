// Fixtures for the proc-reaper integration tests: real student processes under a real
// unprivileged uid, inside a real cgroup v1 pids+freezer group when asked.
//
// V1TestGroup implements KillableGroup directly on /sys/fs/cgroup/{pids,freezer} (freeze,
// SIGKILL every member, thaw), the same contract @karotte/limits implements; the tests code
// against the interface only.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { GroupKillResult, KillableGroup } from '@karotte/limits';

const CGROUP_ROOT = '/sys/fs/cgroup';
let groupCounter = 0;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function readIds(file: string): number[] {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => /^\d+$/.test(line))
      .map(Number);
  } catch {
    return [];
  }
}

/** A cgroup v1 pids+freezer pair named karotte-test-reaper-…, removed by destroy(). */
export class V1TestGroup implements KillableGroup {
  readonly name: string;
  readonly pidsDir: string;
  readonly freezerDir: string;

  private constructor(name: string) {
    this.name = name;
    this.pidsDir = path.join(CGROUP_ROOT, 'pids', name);
    this.freezerDir = path.join(CGROUP_ROOT, 'freezer', name);
  }

  static create(label: string): V1TestGroup {
    groupCounter += 1;
    const group = new V1TestGroup(`karotte-test-reaper-${label}-${process.pid}-${groupCounter}`);
    fs.mkdirSync(group.pidsDir);
    fs.mkdirSync(group.freezerDir);
    return group;
  }

  /** Files a launcher writes its pid to, to join the group before it runs student code. */
  get procsFiles(): string[] {
    return [path.join(this.pidsDir, 'cgroup.procs'), path.join(this.freezerDir, 'cgroup.procs')];
  }

  /** argv prefix that joins this group, then execs the rest (like LimitGroup.launchPrefix()). */
  launchPrefix(): string[] {
    return ['/bin/sh', '-c', LAUNCHER, 'karotte-launch', ...this.procsFiles, '--'];
  }

  /** Set pids.max and read it back; throws when the kernel did not take it. */
  setPidsMax(max: number): void {
    fs.writeFileSync(path.join(this.pidsDir, 'pids.max'), String(max));
    const back = fs.readFileSync(path.join(this.pidsDir, 'pids.max'), 'utf8').trim();
    if (back !== String(max)) throw new Error(`pids.max reads back ${back}, wanted ${max}`);
  }

  pidsCurrent(): number {
    return Number(fs.readFileSync(path.join(this.pidsDir, 'pids.current'), 'utf8').trim());
  }

  /** `max` events of pids.events: forks refused by pids.max. */
  pidsMaxEvents(): number {
    const text = fs.readFileSync(path.join(this.pidsDir, 'pids.events'), 'utf8');
    return Number(/^max (\d+)/m.exec(text)?.[1] ?? 0);
  }

  async killAll(): Promise<GroupKillResult> {
    const state = path.join(this.freezerDir, 'freezer.state');
    fs.writeFileSync(state, 'FROZEN');
    const deadline = Date.now() + 5000;
    while (fs.readFileSync(state, 'utf8').trim() !== 'FROZEN' && Date.now() < deadline) await sleep(5);
    let signalled = 0;
    for (const pid of await this.pids()) {
      try {
        process.kill(pid, 'SIGKILL');
        signalled += 1;
      } catch {
        // exited
      }
    }
    fs.writeFileSync(state, 'THAWED');
    return { mechanism: 'freeze-kill-thaw', signalled };
  }

  pids(): Promise<number[]> {
    const all = new Set([
      ...readIds(path.join(this.pidsDir, 'cgroup.procs')),
      ...readIds(path.join(this.freezerDir, 'cgroup.procs')),
    ]);
    return Promise.resolve([...all]);
  }

  /** Kill everything left, wait for the group to empty, remove both directories. */
  async destroy(): Promise<void> {
    if (!fs.existsSync(this.pidsDir) && !fs.existsSync(this.freezerDir)) return;
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (fs.existsSync(this.freezerDir)) await this.killAll();
      try {
        if (fs.existsSync(this.pidsDir)) fs.rmdirSync(this.pidsDir);
        if (fs.existsSync(this.freezerDir)) fs.rmdirSync(this.freezerDir);
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await sleep(20);
      }
    }
  }
}

/**
 * Shared shell prelude of every student script: `beat NAME` touches a heartbeat file in $D.
 * A heartbeat that reappears after a reap proves a survivor that can still write.
 */
const PRELUDE = 'beat() { : > "$D/beat.$1"; }\nexport -f beat\n';

/** Launcher: join the given cgroups (procs files in $1..$n before `--`), then exec the rest. */
const LAUNCHER = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 90; shift; done; shift; exec "$@"';

export interface StudentOptions {
  readonly dir: string;
  /** argv prefix that puts the process in a group first (LimitGroup or V1TestGroup launchPrefix()). */
  readonly prefix?: readonly string[];
}

/**
 * Start `script` (bash) as `uid` (no passwd entry, no groups), in `group` when given. Stdio is
 * ignored so no escapee holds a pipe of the test. Returns the launcher (its own process group).
 */
export function spawnStudent(uid: number, script: string, options: StudentOptions): ChildProcess {
  const argv = [
    ...(options.prefix ?? []),
    '/usr/bin/setpriv',
    '--reuid',
    String(uid),
    '--regid',
    String(uid),
    '--clear-groups',
    '--',
    '/bin/bash',
    '-c',
    PRELUDE + script,
    'karotte-student',
  ];
  const child = spawn(argv[0]!, argv.slice(1), {
    stdio: 'ignore',
    detached: true,
    cwd: options.dir,
    env: { D: options.dir, PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: options.dir, LC_ALL: 'C' },
  });
  child.on('error', () => undefined);
  return child;
}

/** A 0777 directory for heartbeats (the student writes there). */
export function studentDir(base: string): string {
  const dir = path.join(base, 'student');
  fs.mkdirSync(dir);
  fs.chmodSync(dir, 0o777);
  return dir;
}

/** Names of the heartbeat files present now. */
export function beats(dir: string): string[] {
  return fs.readdirSync(dir).filter((name) => name.startsWith('beat.'));
}

/**
 * Remove every heartbeat, wait `quietMs`, and return the ones that came back: a non-empty
 * result means some process of the cohort was still alive and writing after the reap.
 */
export async function heartbeatsAfter(dir: string, quietMs = 1500): Promise<string[]> {
  for (const name of beats(dir)) fs.rmSync(path.join(dir, name), { force: true });
  await sleep(quietMs);
  return beats(dir);
}

/** States (one letter) of the uid's processes, including zombies. */
export function statesOfUid(uid: number): string[] {
  const out: string[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = fs.readFileSync(`/proc/${name}/status`, 'utf8');
      if (/^Uid:\s+(\d+)/m.exec(status)?.[1] === String(uid)) {
        out.push(/^State:\s+(\S)/m.exec(status)?.[1] ?? '?');
      }
    } catch {
      // exited
    }
  }
  return out;
}

/** Remove SysV objects created by uid (test cleanup), with ipcrm by id. */
export function removeSysvOf(uid: number): void {
  for (const [kind, flag] of [
    ['shm', '-m'],
    ['sem', '-s'],
    ['msg', '-q'],
  ] as const) {
    let text = '';
    try {
      text = fs.readFileSync(`/proc/sysvipc/${kind}`, 'utf8');
    } catch {
      continue;
    }
    const lines = text.split('\n');
    const header = lines[0]?.trim().split(/\s+/) ?? [];
    const idIndex = header.findIndex(
      (column) => column.endsWith('id') && column !== 'cuid' && column !== 'uid',
    );
    const cuidIndex = header.indexOf('cuid');
    for (const line of lines.slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[cuidIndex] === String(uid) && fields[idIndex] !== undefined) {
        spawnSync('/usr/bin/ipcrm', [flag, fields[idIndex]]);
      }
    }
  }
}

export { sleep };
