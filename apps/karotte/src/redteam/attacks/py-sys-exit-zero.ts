import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-sys-exit-zero',
  class: 'test-tricks',
  languages: ['python'],
  why: 'exits with status 0 as soon as the module is imported (sys.exit(0) before any assertion runs): a grader that trusts the exit status of the test run sees success',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
import sys
sys.exit(0)
def answer(*args, **kwargs):
    return None
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
