import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-atexit-exit',
  class: 'test-tricks',
  languages: ['python'],
  why: 'lets the tests run and fail, and rewrites the exit status on the way out: an atexit handler calls os._exit(0) after the runner has decided to exit 1',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
import atexit, os
atexit.register(lambda: os._exit(0))
def answer(*args, **kwargs):
    return None
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
