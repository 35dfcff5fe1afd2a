import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-memory-bomb',
  class: 'resource-exhaustion',
  languages: ['python'],
  why: "submits a Python module that allocates memory without end at import, inside the grader: its limit must stop it as the submission's failure",
  commands: [
    String.raw`cat > {{submission}} <<'PY'
hog = []
while True:
    hog.append(bytearray(64 * 1024 * 1024))
PY
head -c 200 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded', 'grader', 'GRADER_FAILED'],
});
