import { defineAttack } from '../attack.js';
import { PY_FAKE_PASS_HOOK } from '../fragments.js';

export default defineAttack({
  id: 'py-pth-file',
  class: 'test-tricks',
  languages: ['python'],
  why: 'plants .pth files, whose import lines the site module runs at every interpreter start, in the user site-packages and in a user base of its own, each running the patch that fakes a pass',
  commands: [
    String.raw`cat > /tmp/.karotte_pth.py <<'PY'
${PY_FAKE_PASS_HOOK}PY
site=$(python3 -c 'import site; print(site.getusersitepackages())' 2>/dev/null); base="$PWD/.userbase"; alt=$(PYTHONUSERBASE="$base" python3 -c 'import site; print(site.getusersitepackages())' 2>/dev/null); for d in "$site" "$alt"; do mkdir -p "$d" && cp /tmp/.karotte_pth.py "$d/karotte_pth.py" && echo 'import karotte_pth' > "$d/00-karotte.pth" && echo "planted $d/00-karotte.pth"; done; export PYTHONUSERBASE="$base"; python3 -c 'import sys; print("karotte_pth" in sys.modules)'`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
