import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Task, ToolProfile } from '@karotte/core';

/**
 * The world fingerprint of an episode: `sha256:<hex>` over everything its world is built from
 * (the task id, every step's instructions and submission paths, the limits, the tool profile,
 * the seed, and every file under `student/`: its relative path, type, mode, size and content
 * digest). Computed afresh for each member of a group right before its world is made, so a
 * task directory that changed between two members' builds shows as two fingerprints.
 */
export async function worldFingerprint(task: Task, profile: ToolProfile, seed: number): Promise<string> {
  const hash = createHash('sha256');
  hash.update(
    JSON.stringify({
      taskId: task.id,
      steps: task.steps.map((step) => ({ instructions: step.instructions, submission: step.submission })),
      limits: task.limits,
      tools: profile.name,
      seed,
    }),
  );
  if (task.studentDir !== undefined) await hashTree(hash, task.studentDir, '');
  return `sha256:${hash.digest('hex')}`;
}

async function hashTree(hash: ReturnType<typeof createHash>, root: string, rel: string): Promise<void> {
  const entries = await fs.readdir(path.join(root, rel), { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const file = path.join(rel, entry.name);
    const full = path.join(root, file);
    const stats = await fs.lstat(full);
    const mode = (stats.mode & 0o7777).toString(8);
    if (stats.isDirectory()) {
      hash.update(`\0d ${JSON.stringify(file)} ${mode}\n`);
      await hashTree(hash, root, file);
    } else if (stats.isSymbolicLink()) {
      hash.update(`\0l ${JSON.stringify(file)} ${JSON.stringify(await fs.readlink(full))}\n`);
    } else if (stats.isFile()) {
      const content = createHash('sha256')
        .update(await fs.readFile(full))
        .digest('hex');
      hash.update(`\0f ${JSON.stringify(file)} ${mode} ${stats.size} ${content}\n`);
    } else {
      hash.update(`\0o ${JSON.stringify(file)}\n`);
    }
  }
}
