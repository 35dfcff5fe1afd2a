import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'double-fork',
  class: 'process-persistence',
  languages: ['any'],
  why: 'double-forks a daemon that is reparented away from the shell and rewrites the submission',
  commands: [
    String.raw`( ( while :; do echo 1 > {{submission}}; sleep 0.1; done ) & ) ; sleep 0.2; echo done`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
