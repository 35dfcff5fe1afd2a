import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { CoreError, loadTask, type Task } from '@karotte/core';
import { DispatchError } from './errors.js';

/** The most files a task directory may hold for {@link taskDigest}. */
const MAX_DIGEST_FILES = 100_000;

/**
 * The digest of a task directory: SHA-256 over every entry under it in sorted order (its
 * relative path, its type, a regular file's bytes, a symlink's target), so the same files give
 * the same digest on every host, and any change to task.json, the grader, `student/` or
 * `hidden/` changes it. Modes and times are left out (a copy keeps the digest).
 */
export async function taskDigest(dir: string): Promise<string> {
  const hash = createHash('sha256');
  let count = 0;
  const walk = async (relative: string): Promise<void> => {
    const entries = await fs.readdir(path.join(dir, relative), { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      count += 1;
      if (count > MAX_DIGEST_FILES)
        throw new DispatchError('INVALID_TASKS', `${dir}: more than ${MAX_DIGEST_FILES} files`, {
          field: dir,
        });
      const rel = relative === '' ? entry.name : `${relative}/${entry.name}`;
      const full = path.join(dir, rel);
      if (entry.isDirectory()) {
        hash.update(`d ${rel}\n`);
        await walk(rel);
      } else if (entry.isSymbolicLink()) {
        hash.update(`l ${rel} ${await fs.readlink(full)}\n`);
      } else if (entry.isFile()) {
        const bytes = await fs.readFile(full);
        hash.update(`f ${rel} ${bytes.length}\n`);
        hash.update(bytes);
      } else {
        hash.update(`o ${rel}\n`);
      }
    }
  };
  await walk('');
  return `sha256:${hash.digest('hex')}`;
}

/** One task a worker can run: its directory and digest. */
export interface StoredTask {
  readonly id: string;
  readonly dir: string;
  readonly digest: string;
  readonly task: Task;
}

/**
 * The tasks of a worker's own directory: each child directory holding a task.json, indexed by
 * task id (two with one id are refused). Loaded again on a miss, so a task added while the
 * worker runs is found; a task is loaded and its digest taken when it is asked for, so an edit
 * on disk is what the next episode runs and checks.
 */
export class TaskStore {
  private index = new Map<string, string>();

  private constructor(readonly root: string) {}

  /** Index `root`. @throws DispatchError `INVALID_TASKS`. */
  static async open(root: string): Promise<TaskStore> {
    const store = new TaskStore(path.resolve(root));
    await store.rescan();
    return store;
  }

  /** The task ids found. */
  ids(): string[] {
    return [...this.index.keys()].sort();
  }

  private async rescan(): Promise<void> {
    let entries;
    try {
      entries = await fs.readdir(this.root, { withFileTypes: true });
    } catch (error) {
      throw new DispatchError('INVALID_TASKS', `cannot read the task directory ${this.root}`, {
        cause: error,
        field: 'tasks',
      });
    }
    const next = new Map<string, string>();
    // The root itself may be one task.
    const candidates = [this.root];
    for (const entry of entries) {
      const dir = path.join(this.root, entry.name);
      // A task linked in (a symlink to its directory) counts like one copied in.
      const linkedDir =
        entry.isSymbolicLink() && (await fs.stat(dir).catch(() => null))?.isDirectory() === true;
      if (entry.isDirectory() || linkedDir) candidates.push(dir);
    }
    for (const dir of candidates) {
      let task: Task;
      try {
        await fs.access(path.join(dir, 'task.json'));
      } catch {
        continue;
      }
      try {
        task = await loadTask(dir);
      } catch (error) {
        if (CoreError.isInstance(error) && error.kind === 'bad_argument') continue; // not runnable: not offered
        throw error;
      }
      const other = next.get(task.id);
      if (other !== undefined)
        throw new DispatchError('INVALID_TASKS', `task id ${task.id} is in both ${other} and ${dir}`, {
          field: task.id,
        });
      next.set(task.id, dir);
    }
    this.index = next;
  }

  /** The task of `id`, loaded now, or null when this worker has none of that id. */
  async get(id: string): Promise<StoredTask | null> {
    let dir = this.index.get(id);
    if (dir === undefined) {
      await this.rescan();
      dir = this.index.get(id);
      if (dir === undefined) return null;
    }
    const task = await loadTask(dir);
    if (task.id !== id) return null;
    return { id, dir, digest: await taskDigest(dir), task };
  }
}
