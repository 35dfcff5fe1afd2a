import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'c-assert-override',
  class: 'test-tricks',
  languages: ['c'],
  why: "defines the C library's failure paths itself (__assert_fail, abort, __stack_chk_fail) as functions that return or exit 0: a failed assert() in the grader's tests is linked to the student's no-op",
  commands: [
    String.raw`cat >> {{submission}} <<'CEOF'

#include <unistd.h>
void __assert_fail(const char *expr, const char *file, unsigned int line, const char *fn) {
  (void)expr; (void)file; (void)line; (void)fn;
}
void abort(void) { _exit(0); }
void __stack_chk_fail(void) { _exit(0); }
CEOF
tail -n 8 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
