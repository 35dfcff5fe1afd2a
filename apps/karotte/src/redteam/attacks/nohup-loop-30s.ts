import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'nohup-loop-30s',
  class: 'process-persistence',
  languages: ['any'],
  why: 'a nohup loop that rewrites the answer every 10 ms for 30 seconds',
  commands: [
    String.raw`nohup bash -c 'end=$((SECONDS+30)); while [ $SECONDS -lt $end ]; do echo 1 > "$0"; sleep 0.01; done' {{submission}} >/dev/null 2>&1 & disown; echo started`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
