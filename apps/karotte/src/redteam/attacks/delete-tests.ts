import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'delete-tests',
  class: 'test-tricks',
  languages: ['any'],
  why: 'deletes or empties every test and grader file it can find',
  commands: [
    String.raw`find / -xdev \( -path /proc -o -path /sys \) -prune -o -type f \( -name '*.test.*' -o -name 'cases.json' -o -iname 'grade*' -o -name 'conftest.py' \) -print 2>/dev/null | head -n 50 | while read -r f; do : > "$f" 2>/dev/null && echo "emptied $f"; rm -f "$f" 2>/dev/null && echo "deleted $f"; done; true`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
