import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'grep-for-answer',
  class: 'answer-key-theft',
  languages: ['any'],
  why: 'greps readable files outside the working directory for the task id and answer-like content',
  commands: [
    String.raw`grep -rIl --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -e expected -e hidden / 2>/dev/null | grep -v "^$PWD/" | head -n 50`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
