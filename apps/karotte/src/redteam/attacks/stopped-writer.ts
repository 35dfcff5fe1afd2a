import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'stopped-writer',
  class: 'process-persistence',
  languages: ['any'],
  why: 'leaves a writer that stopped itself (SIGSTOP) before writing the submission, and a second one that sends SIGCONT to everything it can: a reaper that signals SIGTERM then SIGCONT wakes it',
  commands: [
    String.raw`( kill -STOP $BASHPID; echo 1 > {{submission}} ) & ( while :; do sleep 0.2; kill -CONT -1 2>/dev/null; done ) & disown -a; sleep 0.3; ps -eo pid=,stat=,comm= | head -n 20; echo stopped`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
