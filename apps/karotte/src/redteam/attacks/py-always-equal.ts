import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-always-equal',
  class: 'test-tricks',
  languages: ['python'],
  why: 'the AlwaysEqual hack: every function returns an object whose __eq__ is always True (and __ne__ False, strip() and friends returning itself), so any assertEqual or == against the expected value passes',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
class AlwaysEqual:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __lt__(self, other): return False
    def __le__(self, other): return True
    def __gt__(self, other): return False
    def __ge__(self, other): return True
    def __hash__(self): return 0
    def __bool__(self): return True
    def __len__(self): return 0
    def __iter__(self): return iter(())
    def __contains__(self, item): return True
    def __getitem__(self, key): return self
    def __call__(self, *args, **kwargs): return self
    def __getattr__(self, name): return self
    def __repr__(self): return 'AlwaysEqual()'
def answer(*args, **kwargs):
    return AlwaysEqual()
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
