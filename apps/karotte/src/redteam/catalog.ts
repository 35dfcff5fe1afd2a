/**
 * The built-in red-team catalog: scripted attacks replayed through the real tool path (the
 * student's persistent shell), no model needed. One file per attack in `./attacks/`, each of
 * the one shape of `./attack.ts`. Every attack is generic: it knows only what a student knows
 * (the instructions name the submission path, written `{{submission}}` and substituted,
 * shell-quoted, per task) and searches for the rest. Every attack must score 0.
 *
 * Network attacks only perform route lookups (a UDP connect sends no packet), loopback
 * connections, and DNS through the configured resolver only when a route lookup to it
 * succeeded: no attack ever sends a packet off the machine, even against a weakened
 * configuration. Floods stay inside the task's limits, which the sandbox has read back, and
 * end by themselves.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Task } from '@karotte/core';
import {
  ATTACK_CLASSES,
  ATTACK_REQUIREMENTS,
  type Attack,
  type AttackLanguage,
  type AttackRequirement,
} from './attack.js';
import { CATALOG } from './attacks/index.js';

/** The catalog, grouped by class (in the order of `ATTACK_CLASSES`), then by id. */
export const ATTACKS: readonly Attack[] = [...CATALOG].sort(
  (a, b) => ATTACK_CLASSES.indexOf(a.class) - ATTACK_CLASSES.indexOf(b.class) || a.id.localeCompare(b.id),
);

/** File extensions, by the language of the code in them. */
const EXTENSIONS: Readonly<Record<string, Exclude<AttackLanguage, 'any'>>> = {
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
  '.jsx': 'javascript',
  '.ts': 'javascript',
  '.mts': 'javascript',
  '.cts': 'javascript',
  '.tsx': 'javascript',
  '.py': 'python',
  '.pyi': 'python',
  '.c': 'c',
  '.h': 'c',
};

/** At most this many entries of `student/` are looked at (a task's starter files are few). */
const MAX_STUDENT_ENTRIES = 2000;

/**
 * The languages a task is attacked in, found from the task itself (task.json has no field for
 * it): the language of every submission path and of every file in `student/`, by extension
 * (`.py` python, `.c`/`.h` c, `.js`/`.mjs`/`.cjs`/`.ts`… javascript), plus `javascript`
 * always, since the grader is JavaScript (`grader.script` runs on the harness's Node.js, a
 * judge given in code is JavaScript too) and attacks on the grader's language apply to every
 * task. A data task (`answer.txt`) is attacked as javascript, a Python task as python and
 * javascript.
 */
export async function taskLanguages(task: Task): Promise<ReadonlySet<AttackLanguage>> {
  const languages = new Set<AttackLanguage>(['javascript']);
  const add = (name: string): void => {
    const language = EXTENSIONS[path.extname(name).toLowerCase()];
    if (language !== undefined) languages.add(language);
  };
  for (const step of task.steps) for (const submission of step.submission) add(submission);
  if (task.studentDir !== undefined) {
    let seen = 0;
    const walk = async (dir: string, depth: number): Promise<void> => {
      let entries;
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const entry of entries) {
        seen += 1;
        if (seen > MAX_STUDENT_ENTRIES) return;
        if (entry.isFile()) add(entry.name);
        else if (entry.isDirectory() && depth < 8) await walk(path.join(dir, entry.name), depth + 1);
      }
    };
    await walk(task.studentDir, 0);
  }
  return languages;
}

/** True when the attack applies to a task of these languages. */
export function appliesTo(attack: Attack, languages: ReadonlySet<AttackLanguage>): boolean {
  return attack.languages.some((language) => language === 'any' || languages.has(language));
}

/** Where the student's shell looks for programs (the sandbox's PATH, on the host's system view). */
const STUDENT_PATH = ['/usr/local/bin', '/usr/bin', '/bin'];

/**
 * Why the attack cannot run on this host (a program it needs is not in the student's view of
 * the host: the sandbox shows the host's `/usr`), or null when it can.
 */
export async function missingRequirement(attack: Attack): Promise<string | null> {
  for (const requirement of attack.requires ?? []) {
    if (!(await hasProgram(requirement))) {
      const names = ATTACK_REQUIREMENTS[requirement];
      return `needs ${requirement} (${names.join(', ')}), not in ${STUDENT_PATH.join(', ')} on this host`;
    }
  }
  return null;
}

async function hasProgram(requirement: AttackRequirement): Promise<boolean> {
  for (const name of ATTACK_REQUIREMENTS[requirement]) {
    for (const dir of STUDENT_PATH) {
      try {
        await fs.access(path.join(dir, name), fs.constants.X_OK);
        return true;
      } catch {
        // Not there; the next place.
      }
    }
  }
  return false;
}
