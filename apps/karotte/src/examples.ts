import path from 'node:path';
import { APP_DIR } from './app-world.js';

/** The example tasks shipped with the app (`apps/karotte/examples`). */
export const EXAMPLES_DIR = path.join(APP_DIR, 'examples');

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
