import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'nested-namespace',
  class: 'process-persistence',
  languages: ['any'],
  why: 'hides a writer in a nested user and PID namespace',
  commands: [
    String.raw`unshare -Ur --pid --fork bash -c 'while :; do echo 1 > "$0"; sleep 0.1; done' {{submission}} >/dev/null 2>&1 & disown; sleep 0.3; echo nested $?`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
