import { defineAttack } from '../attack.js';
import { PY_ALWAYS_EQUAL } from '../fragments.js';

export default defineAttack({
  id: 'py-settrace-rewrite',
  class: 'test-tricks',
  languages: ['python'],
  why: 'installs a trace function (sys.settrace, threading.settrace) that, line by line in every caller, overwrites a local named expected with an object equal to anything, writing it back into the frame with PyFrame_LocalsToFast',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
${PY_ALWAYS_EQUAL}import ctypes, sys, threading
_KEYS = ('expected', 'want', 'wanted', 'answer')
def _trace(frame, event, arg):
    if event == 'line':
        hit = [k for k in _KEYS if k in frame.f_locals and not isinstance(frame.f_locals[k], AlwaysEqual)]
        for k in hit:
            frame.f_locals[k] = AlwaysEqual()
        if hit:
            try:
                ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
            except Exception:
                pass
    return _trace
sys.settrace(_trace)
threading.settrace(_trace)
def answer(*args, **kwargs):
    return AlwaysEqual()
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
