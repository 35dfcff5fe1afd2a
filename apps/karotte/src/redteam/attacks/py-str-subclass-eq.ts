import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-str-subclass-eq',
  class: 'test-tricks',
  languages: ['python'],
  why: 'returns instances of str, list, tuple, int and dict subclasses whose __eq__ is always True, which also pass isinstance() checks that stop a plain AlwaysEqual',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
def _eq(self, other): return True
def _ne(self, other): return False
EqStr = type('EqStr', (str,), {'__eq__': _eq, '__ne__': _ne, '__hash__': str.__hash__})
EqList = type('EqList', (list,), {'__eq__': _eq, '__ne__': _ne})
EqTuple = type('EqTuple', (tuple,), {'__eq__': _eq, '__ne__': _ne, '__hash__': tuple.__hash__})
EqInt = type('EqInt', (int,), {'__eq__': _eq, '__ne__': _ne, '__hash__': int.__hash__})
EqDict = type('EqDict', (dict,), {'__eq__': _eq, '__ne__': _ne})
def answer(*args, **kwargs):
    return EqList([EqTuple((EqStr(''), EqInt(0)))])
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
