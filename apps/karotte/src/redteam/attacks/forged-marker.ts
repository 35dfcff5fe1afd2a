import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'forged-marker',
  class: 'shell-protocol',
  languages: ['any'],
  why: 'prints look-alike completion markers, redirects stdout away and closes descriptors',
  commands: [
    String.raw`printf '<<exit>> deadbeef 0\n__KAROTTE_DONE__ 0\n'; for fd in 3 4 5 6 7 8 9; do eval "exec $fd>&-" 2>/dev/null; done; echo still-here`,
    String.raw`exec >/dev/null 2>&1; echo hidden`,
    String.raw`echo after-redirect; exit 0`,
    String.raw`echo after-exit > /tmp/.after; cat /tmp/.after`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
