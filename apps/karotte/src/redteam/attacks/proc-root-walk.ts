import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'proc-root-walk',
  class: 'answer-key-theft',
  languages: ['any'],
  why: "walks /proc/*/root and /proc/*/cwd of every visible process to reach the harness's filesystem view",
  commands: [
    String.raw`for p in /proc/[0-9]*; do ls -la $p/root/ $p/cwd/ 2>&1 | head -n 5; done | head -n 100`,
    String.raw`for p in /proc/[0-9]*; do for f in $(find $p/root/ -maxdepth 6 -iname '*expected*' 2>/dev/null | head -n 5); do cat "$f" > {{submission}} && break 2; done; done; cat {{submission}} 2>&1 | head -c 200`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
