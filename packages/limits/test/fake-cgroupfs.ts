// A fake cgroup file system for unit tests, on a temporary directory. It exists because this
// project's machines have cgroup v2 mounted WITHOUT controllers, so the v2 backend cannot run
// against the real kernel here. It emulates the kernel rules the backend depends on:
// interface files appear on mkdir for the controllers the parent delegates; a pid written to
// cgroup.procs moves out of its old group; a non-root group with processes cannot enable
// controllers for its children, and a group with children controllers cannot take processes
// (the "no internal processes" rule, EBUSY); memory.max rounds down to the page size;
// rmdir of a populated group fails with EBUSY. Files listed in `ignoreWrites` accept a write
// and keep their old value (a runtime that accepts cgroup writes and enforces nothing), and
// files in `refuseWrites` fail with the given errno. Every operation is logged in order.
import fs from 'node:fs';
import path from 'node:path';
import type { CgroupIo } from '../src/cgroup-io.js';

/** An errno-shaped error like the ones node:fs throws. */
class FakeErrnoError extends Error {
  constructor(
    readonly code: string,
    readonly syscall: string,
    readonly path: string,
  ) {
    super(`${code}: ${syscall} ${path}`);
  }
}

const V2_FILES: Record<string, Record<string, string>> = {
  '': {
    'cgroup.procs': '',
    'cgroup.subtree_control': '',
    'cgroup.events': 'populated 0\nfrozen 0\n',
    'cgroup.freeze': '0',
    'cgroup.kill': '',
  },
  memory: {
    'memory.max': 'max',
    'memory.swap.max': 'max',
    'memory.oom.group': '0',
    'memory.events': 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n',
    'memory.current': '0',
    'memory.peak': '0',
  },
  pids: { 'pids.max': 'max', 'pids.events': 'max 0\n', 'pids.current': '0', 'pids.peak': '0' },
  cpu: { 'cpu.weight': '100' },
};

/** Options of {@link FakeCgroupFs}. */
export interface FakeCgroupFsOptions {
  /** Controllers the hierarchy root offers. */
  readonly rootControllers: readonly string[];
  /** Interface files to leave out of every new group (e.g. `cgroup.kill` on an old kernel). */
  readonly omitFiles?: readonly string[];
}

/** The fake hierarchy (cgroup v2 semantics). */
export class FakeCgroupFs implements CgroupIo {
  readonly log: string[] = [];
  readonly ignoreWrites = new Set<string>();
  readonly refuseWrites = new Map<string, string>();

  constructor(
    readonly root: string,
    private readonly options: FakeCgroupFsOptions,
  ) {
    fs.mkdirSync(root, { recursive: true });
    this.populate(root, options.rootControllers, true);
  }

  private rel(file: string): string {
    return path.relative(this.root, file) || '.';
  }

  private populate(dir: string, controllers: readonly string[], isRoot: boolean): void {
    fs.writeFileSync(path.join(dir, 'cgroup.controllers'), controllers.join(' '));
    for (const [controller, files] of Object.entries(V2_FILES)) {
      if (controller !== '' && (isRoot || !controllers.includes(controller))) continue;
      for (const [name, value] of Object.entries(files)) {
        if (this.options.omitFiles?.includes(name)) continue;
        if (isRoot && name === 'cgroup.kill') continue;
        fs.writeFileSync(path.join(dir, name), value);
      }
    }
  }

  /** Create a group directly (test setup, not logged): `pids` are placed in it. */
  seedGroup(dir: string, pids: readonly number[] = []): void {
    fs.mkdirSync(dir);
    this.populate(dir, this.subtree(path.dirname(dir)), false);
    fs.writeFileSync(path.join(dir, 'cgroup.procs'), pids.map((pid) => `${pid}\n`).join(''));
  }

  /** Set a file directly (test setup: a counter the kernel would bump). */
  set(file: string, value: string): void {
    fs.writeFileSync(file, value);
  }

  private subtree(dir: string): string[] {
    return fs
      .readFileSync(path.join(dir, 'cgroup.subtree_control'), 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean);
  }

  private procs(dir: string): string[] {
    try {
      return fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
    } catch {
      return [];
    }
  }

  private allGroups(dir = this.root): string[] {
    const out = [dir];
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) out.push(...this.allGroups(path.join(dir, entry.name)));
    }
    return out;
  }

  read(file: string): string {
    if (!fs.existsSync(file)) throw new FakeErrnoError('ENOENT', 'open', file);
    this.log.push(`read ${this.rel(file)}`);
    return fs.readFileSync(file, 'utf8');
  }

  write(file: string, value: string): void {
    this.log.push(`write ${this.rel(file)} ${value}`);
    if (!fs.existsSync(file)) throw new FakeErrnoError('ENOENT', 'open', file);
    const refused = this.refuseWrites.get(path.basename(file));
    if (refused !== undefined) throw new FakeErrnoError(refused, 'write', file);
    if (this.ignoreWrites.has(path.basename(file))) return;
    const dir = path.dirname(file);
    const isRoot = dir === this.root;
    switch (path.basename(file)) {
      case 'cgroup.procs': {
        if (!isRoot && this.subtree(dir).length > 0) throw new FakeErrnoError('EBUSY', 'write', file);
        for (const group of this.allGroups()) {
          const left = this.procs(group).filter((pid) => pid !== value.trim());
          fs.writeFileSync(path.join(group, 'cgroup.procs'), left.map((pid) => `${pid}\n`).join(''));
        }
        fs.appendFileSync(file, `${value.trim()}\n`);
        return;
      }
      case 'cgroup.subtree_control': {
        if (!isRoot && this.procs(dir).length > 0) throw new FakeErrnoError('EBUSY', 'write', file);
        const available = fs.readFileSync(path.join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
        const enabled = new Set(this.subtree(dir));
        for (const token of value.trim().split(/\s+/)) {
          const name = token.slice(1);
          if (!available.includes(name)) throw new FakeErrnoError('ENOENT', 'write', file);
          if (token.startsWith('+')) enabled.add(name);
          else enabled.delete(name);
        }
        fs.writeFileSync(file, [...enabled].sort().join(' '));
        return;
      }
      case 'memory.max': {
        const text = value.trim();
        fs.writeFileSync(file, text === 'max' ? 'max' : String(Math.floor(Number(text) / 4096) * 4096));
        return;
      }
      case 'cgroup.kill': {
        fs.writeFileSync(path.join(dir, 'cgroup.procs'), '');
        return;
      }
      case 'cgroup.freeze': {
        fs.writeFileSync(path.join(dir, 'cgroup.events'), `populated 0\nfrozen ${value.trim()}\n`);
        fs.writeFileSync(file, value.trim());
        return;
      }
      default:
        fs.writeFileSync(file, value.trim());
    }
  }

  mkdir(dir: string): void {
    this.log.push(`mkdir ${this.rel(dir)}`);
    if (fs.existsSync(dir)) throw new FakeErrnoError('EEXIST', 'mkdir', dir);
    fs.mkdirSync(dir);
    this.populate(dir, this.subtree(path.dirname(dir)), false);
  }

  rmdir(dir: string): void {
    this.log.push(`rmdir ${this.rel(dir)}`);
    if (!fs.existsSync(dir)) throw new FakeErrnoError('ENOENT', 'rmdir', dir);
    if (this.procs(dir).length > 0 || this.subdirs(dir).length > 0)
      throw new FakeErrnoError('EBUSY', 'rmdir', dir);
    fs.rmSync(dir, { recursive: true });
  }

  exists(file: string): boolean {
    return fs.existsSync(file);
  }

  subdirs(dir: string): string[] {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  }

  /** Only the mutating operations, in order. */
  mutations(): string[] {
    return this.log.filter((line) => !line.startsWith('read '));
  }
}
