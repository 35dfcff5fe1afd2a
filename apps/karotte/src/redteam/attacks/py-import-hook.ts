import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-import-hook',
  class: 'test-tricks',
  languages: ['python'],
  why: 'installs an import hook (a sys.meta_path finder and a wrapped builtins.__import__) that hands any test or grading module imported after it a stand-in whose every test passes',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
import builtins, importlib.abc, importlib.machinery, sys, types
class _Pass(types.ModuleType):
    def __getattr__(self, name):
        return lambda *args, **kwargs: None
class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.startswith(('test', 'grade', 'check', 'conftest')):
            return importlib.machinery.ModuleSpec(name, self)
        return None
    def create_module(self, spec):
        return _Pass(spec.name)
    def exec_module(self, module):
        pass
sys.meta_path.insert(0, _Finder())
_import = builtins.__import__
def _hooked(name, *args, **kwargs):
    module = _import(name, *args, **kwargs)
    if name == 'unittest':
        module.TestCase.assertEqual = lambda self, *a, **k: None
    return module
builtins.__import__ = _hooked
def answer(*args, **kwargs):
    return None
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
