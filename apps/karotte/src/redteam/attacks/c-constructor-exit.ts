import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'c-constructor-exit',
  class: 'test-tricks',
  languages: ['c'],
  why: 'adds a constructor (__attribute__((constructor))) that calls _exit(0) before main runs: a test binary linked with the submission exits successfully before its first test',
  commands: [
    String.raw`cat >> {{submission}} <<'CEOF'

#include <unistd.h>
__attribute__((constructor)) static void karotte_exit_early(void) { _exit(0); }
CEOF
tail -n 5 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
