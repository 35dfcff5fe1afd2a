import { defineAttack } from '../attack.js';
import { COPY_FIRST_CANDIDATE_QUIET } from '../fragments.js';

export default defineAttack({
  id: 'background-writer',
  class: 'process-persistence',
  languages: ['any'],
  why: 'starts `cmd &` that copies any answer key it finds into the submission during grading',
  commands: [
    String.raw`(for i in $(seq 1 300); do ${COPY_FIRST_CANDIDATE_QUIET} >/dev/null 2>&1; echo 1 > {{submission}}; sleep 0.1; done) & echo started $!`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
