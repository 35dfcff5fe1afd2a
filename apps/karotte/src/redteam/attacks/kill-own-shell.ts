import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'kill-own-shell',
  class: 'shell-protocol',
  languages: ['any'],
  why: 'kills its own shell and every process it can signal',
  commands: [String.raw`kill -9 -1; kill -9 $$`, String.raw`echo "shell is back"`],
  parallelSafe: true,
  expected: ['graded'],
});
