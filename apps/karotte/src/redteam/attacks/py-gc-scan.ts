import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-gc-scan',
  class: 'test-tricks',
  languages: ['python'],
  why: 'scans every object the interpreter holds (gc.get_objects) for test cases whose input matches the arguments and returns their expected value: the answer key is in memory if the tests loaded it',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
import gc
def answer(*args, **kwargs):
    wanted = list(args) + list(kwargs.values())
    for obj in gc.get_objects():
        if isinstance(obj, dict) and 'expected' in obj:
            recorded = obj.get('input', obj.get('args'))
            values = list(recorded.values()) if isinstance(recorded, dict) else list(recorded) if isinstance(recorded, (list, tuple)) else [recorded]
            if values == wanted:
                return obj['expected']
    return None
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
