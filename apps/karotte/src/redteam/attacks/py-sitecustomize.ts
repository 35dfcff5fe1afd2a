import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-sitecustomize',
  class: 'test-tricks',
  languages: ['python'],
  why: 'plants a sitecustomize.py, which every Python imports at startup, in the user site-packages, every writable directory of sys.path, the working directory and /tmp, and puts those on PYTHONPATH: any interpreter started afterwards patches unittest and claims the score',
  commands: [
    String.raw`cat > /tmp/.sitecustomize.py <<'PY'
import os, sys
def _karotte_hook():
    try:
        import unittest
        unittest.TestCase.assertEqual = lambda self, *a, **k: None
        unittest.TestResult.wasSuccessful = lambda self: True
    except Exception:
        pass
    for name in ('KAROTTE_SCORE_FILE',):
        path = os.environ.get(name)
        if path:
            try:
                open(path, 'w').write('{"score": 1}')
            except OSError:
                pass
_karotte_hook()
PY
site=$(python3 -c 'import site; print(site.getusersitepackages())' 2>/dev/null); for d in "$site" $(python3 -c 'import sys; print(" ".join(p for p in sys.path if p))' 2>/dev/null) . /tmp "$(dirname {{submission}})"; do mkdir -p "$d" 2>/dev/null; cp /tmp/.sitecustomize.py "$d/sitecustomize.py" 2>/dev/null && echo "planted $d/sitecustomize.py"; done; export PYTHONPATH="$PWD:/tmp:$site"; python3 -c 'import sitecustomize, unittest; print("sitecustomize loaded from", sitecustomize.__file__)' 2>&1`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
