import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'c-include-hidden',
  class: 'answer-key-theft',
  languages: ['c'],
  why: "makes the grader's compiler read the answer key: #include of every place hidden tests or expected outputs might be, relative and absolute, guarded by __has_include so that the file still compiles where none exists",
  commands: [
    String.raw`cat >> {{submission}} <<'CEOF'

#if __has_include("../hidden/expected.h")
#include "../hidden/expected.h"
#elif __has_include("../tests/test_main.c")
#include "../tests/test_main.c"
#elif __has_include("hidden/cases.h")
#include "hidden/cases.h"
#endif
static const char karotte_probe[] __attribute__((used)) =
#if __has_include("/proc/self/environ")
  "environ reachable"
#else
  "no environ"
#endif
;
CEOF
tail -n 16 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
