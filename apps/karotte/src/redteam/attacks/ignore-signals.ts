import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'ignore-signals',
  class: 'process-persistence',
  languages: ['any'],
  why: 'starts a writer that ignores every catchable signal (TERM, HUP, INT, QUIT, USR1, USR2, PIPE) and keeps rewriting the submission, defeating a reaper that asks politely',
  commands: [
    String.raw`( trap '' TERM HUP INT QUIT USR1 USR2 PIPE; while :; do echo 1 > {{submission}}; sleep 0.1; done ) >/dev/null 2>&1 & disown; sleep 0.2; echo immune`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
