import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-os-exit-zero',
  class: 'test-tricks',
  languages: ['python'],
  why: 'ends the process with os._exit(0) at import, which no except clause, finally block or test runner can catch',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
import os
os._exit(0)
def answer(*args, **kwargs):
    return None
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
