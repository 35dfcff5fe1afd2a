import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'thread-bomb',
  class: 'resource-exhaustion',
  languages: ['any'],
  requires: ['python3'],
  why: 'starts threads instead of processes until it cannot (a thread counts against the pids limit as a process does), holding each for 20 seconds',
  commands: [
    String.raw`python3 - <<'PY'
import threading, time
n = 0
try:
    while n < 100000:
        threading.Thread(target=time.sleep, args=(20,), daemon=True).start()
        n += 1
except RuntimeError as error:
    print('stopped after', n, 'threads:', error)
PY`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['PIDS_LIMIT'],
});
