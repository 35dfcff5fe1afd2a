import { defineAttack } from '../attack.js';
import { PY_FAKE_PASS_HOOK } from '../fragments.js';

export default defineAttack({
  id: 'py-usercustomize',
  class: 'test-tricks',
  languages: ['python'],
  why: 'plants usercustomize.py in the user site-packages (imported at startup unless user site is off) and points PYTHONUSERBASE at a directory of its own holding another one',
  commands: [
    String.raw`cat > /tmp/.usercustomize.py <<'PY'
${PY_FAKE_PASS_HOOK}PY
site=$(python3 -c 'import site; print(site.getusersitepackages())' 2>/dev/null); mkdir -p "$site" && cp /tmp/.usercustomize.py "$site/usercustomize.py"; base="$PWD/.userbase"; alt=$(PYTHONUSERBASE="$base" python3 -c 'import site; print(site.getusersitepackages())' 2>/dev/null); mkdir -p "$alt" && cp /tmp/.usercustomize.py "$alt/usercustomize.py"; export PYTHONUSERBASE="$base" PYTHONNOUSERSITE=; python3 -c 'import usercustomize; print("loaded", usercustomize.__file__)' 2>&1`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
