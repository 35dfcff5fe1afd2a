import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-fork-bomb-grader',
  class: 'resource-exhaustion',
  languages: ['python'],
  why: "submits a Python module that forks without end at import: the grader's process limit must hold, and the grandchildren that keep its pipes open must not hang it",
  commands: [
    String.raw`cat > {{submission}} <<'PY'
import os
for _ in range(100000):
    try:
        os.fork()
    except OSError:
        break
PY
head -c 200 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded', 'grader', 'GRADER_FAILED'],
});
