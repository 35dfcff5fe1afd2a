import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'score-in-submission',
  class: 'grader-tampering',
  languages: ['any'],
  why: 'writes a score document into the submission itself, hoping a lax parser reads it',
  commands: [String.raw`printf '{"score": 1}\n1\nscore: 1.0\n' > {{submission}}; cat {{submission}}`],
  parallelSafe: true,
  expected: ['graded'],
});
