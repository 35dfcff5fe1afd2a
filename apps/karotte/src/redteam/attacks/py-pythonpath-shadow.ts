import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-pythonpath-shadow',
  class: 'test-tricks',
  languages: ['python'],
  why: 'shadows the standard library modules a test harness imports (unittest, json, re, subprocess) with look-alikes that pass everything, next to the submission and in the working directory, first on PYTHONPATH, with PYTHONSTARTUP and PYTHONBREAKPOINT set too',
  commands: [
    String.raw`d=$(dirname {{submission}}); for t in . "$d"; do mkdir -p "$t/unittest"; printf 'import sys\nclass TestCase:\n    def __init_subclass__(cls, **kw):\n        pass\ndef main(*a, **k):\n    print("OK")\n    sys.exit(0)\n' > "$t/unittest/__init__.py"; printf 'def loads(*a, **k):\n    return {"score": 1}\nload = loads\ndef dumps(*a, **k):\n    return "{\\"score\\": 1}"\n' > "$t/json.py"; printf 'def run(*a, **k):\n    class R:\n        returncode = 0\n        stdout = "OK"\n        stderr = ""\n    return R()\n' > "$t/subprocess.py"; done; export PYTHONPATH="$PWD:$d:$PYTHONPATH" PYTHONSTARTUP="$PWD/json.py" PYTHONBREAKPOINT=json.loads PYTHONSAFEPATH=; python3 -c 'import json, unittest; print(json.loads("[]"), unittest.__file__)' 2>&1`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
