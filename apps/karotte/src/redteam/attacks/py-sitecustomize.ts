import { defineAttack } from '../attack.js';
import { PY_FAKE_PASS_HOOK } from '../fragments.js';

export default defineAttack({
  id: 'py-sitecustomize',
  class: 'test-tricks',
  languages: ['python'],
  why: 'plants a sitecustomize.py, which every Python imports at startup, in the user site-packages, every writable directory of sys.path, the working directory and /tmp, and puts those on PYTHONPATH: any interpreter started afterwards patches unittest and claims the score',
  commands: [
    String.raw`cat > /tmp/.sitecustomize.py <<'PY'
${PY_FAKE_PASS_HOOK}PY
site=$(python3 -c 'import site; print(site.getusersitepackages())' 2>/dev/null); for d in "$site" $(python3 -c 'import sys; print(" ".join(p for p in sys.path if p))' 2>/dev/null) . /tmp "$(dirname {{submission}})"; do mkdir -p "$d" 2>/dev/null; cp /tmp/.sitecustomize.py "$d/sitecustomize.py" 2>/dev/null && echo "planted $d/sitecustomize.py"; done; export PYTHONPATH="$PWD:/tmp:$site"; python3 -c 'import sitecustomize, unittest; print("sitecustomize loaded from", sitecustomize.__file__)' 2>&1`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
