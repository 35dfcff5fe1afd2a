import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'setsid-nohup-renamed',
  class: 'process-persistence',
  languages: ['any'],
  why: 'starts a renamed setsid+nohup daemon that rewrites the submission for 30 seconds',
  commands: [
    String.raw`setsid nohup bash -c 'exec -a kworker/0:1 bash -c "for i in \$(seq 1 300); do echo 1 > $0; sleep 0.1; done"' {{submission}} >/dev/null 2>&1 < /dev/null & echo started`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
