import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-infinite-loop',
  class: 'resource-exhaustion',
  languages: ['python'],
  why: "submits a Python module that never finishes importing, hoping the grader's timeout is treated as a pass or breaks the run",
  commands: [
    String.raw`cat > {{submission}} <<'PY'
while True:
    pass
PY
head -c 200 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded', 'grader', 'GRADER_FAILED'],
});
