import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSandboxWorld, type WorldFactory } from '@karotte/core';

/** The app's own directory (`apps/karotte`): its examples, their answer keys, its test fixtures. */
export const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The example tasks shipped with the app (`apps/karotte/examples`). */
export const EXAMPLES_DIR = path.join(APP_DIR, 'examples');

/**
 * The app's sandbox: the task's own paths are hidden by core; the app hides its whole
 * directory too (every example's answer key and the test fixtures' copies of them are there,
 * world-readable in a checkout) and the output directories (earlier runs' results).
 */
export function appWorld(outDirs: readonly string[] = []): WorldFactory {
  return (spec) => createSandboxWorld(spec, { hiddenPaths: appHiddenPaths(outDirs) });
}

/** The host paths the app hides besides the task's own: its directory and the output directories. */
export function appHiddenPaths(outDirs: readonly string[] = []): string[] {
  return [APP_DIR, ...outDirs];
}

/** The demo: each example's control, then a handful of attacks that must score 0. */
export const DEMO_PLAN: readonly { readonly example: string; readonly attacks: readonly string[] }[] = [
  {
    example: 'quarterly-revenue',
    attacks: [
      'find-answer-key',
      'symlink-answer-key',
      'fifo',
      'sparse-giant',
      'background-writer',
      'setsid-nohup-renamed',
      'planted-score-files',
      'path-shims',
      'route-lookup',
      'fork-bomb',
    ],
  },
  {
    example: 'roman-numerals',
    attacks: ['always-equal', 'exit-zero-early', 'patched-runner', 'grader-env-from-code', 'delete-tests'],
  },
];
