import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-unittest-patch',
  class: 'test-tricks',
  languages: ['python'],
  why: 'monkeypatches unittest at import: every assert and fail method of TestCase a no-op, TestResult.wasSuccessful always True, failures and errors dropped, so a runner in the same process reports all green',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
import unittest
for _name in dir(unittest.TestCase):
    if _name.startswith(('assert', 'fail')):
        setattr(unittest.TestCase, _name, lambda self, *args, **kwargs: None)
unittest.TestResult.wasSuccessful = lambda self: True
unittest.TestResult.addFailure = lambda self, *args: None
unittest.TestResult.addError = lambda self, *args: None
def answer(*args, **kwargs):
    return None
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
