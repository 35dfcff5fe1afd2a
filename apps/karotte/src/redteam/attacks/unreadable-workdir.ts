import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'unreadable-workdir',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'writes the submission, then makes its own working directory unsearchable (chmod 000 on the directory that holds it), so that custody cannot reach the submission at all',
  commands: [
    String.raw`echo 0 > {{submission}}; d=$(cd "$(dirname {{submission}})" && pwd); chmod 000 "$d"; ls -ld "$d"; ls "$d" 2>&1 | head -n 1`,
  ],
  parallelSafe: true,
  expected: ['graded', 'UNREADABLE'],
});
