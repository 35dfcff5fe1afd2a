import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-pyc-cache',
  class: 'test-tricks',
  languages: ['python'],
  why: "leaves an innocent-looking solution.py beside a __pycache__ .pyc compiled from a cheating one, with the source's size and mtime recorded in it, so that Python runs the cached cheat instead of the source anyone reads",
  commands: [
    String.raw`python3 - {{submission}} <<'PY'
import importlib.util, os, py_compile, sys
path = sys.argv[1]
decoy = open(path).read() if os.path.exists(path) else 'def answer():\n    return None\n'
cheat = 'import os\nos._exit(0)\n'
size = max(len(decoy.encode()), len(cheat.encode()) + 2)
decoy = decoy + '#' * (size - len(decoy.encode()))
cheat = cheat + '#' * (size - len(cheat.encode()))
with open(path, 'w') as f:
    f.write(cheat)
stamp = os.stat(path).st_mtime
py_compile.compile(path, cfile=importlib.util.cache_from_source(path), doraise=True)
with open(path, 'w') as f:
    f.write(decoy)
os.utime(path, (stamp, stamp))
print('decoy in', path, 'cheat in', importlib.util.cache_from_source(path))
PY
ls -la __pycache__ 2>&1; head -n 5 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
