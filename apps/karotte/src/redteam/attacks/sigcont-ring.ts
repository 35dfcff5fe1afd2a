import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'sigcont-ring',
  class: 'process-persistence',
  languages: ['any'],
  why: 'processes that SIGCONT each other, defeating freeze- or SIGSTOP-based reapers',
  commands: [
    String.raw`for i in 1 2 3 4; do (while :; do kill -CONT -1 2>/dev/null; echo 1 > {{submission}}; sleep 0.05; done) & done; disown -a; echo ring`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
