import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'json-proto-pollution',
  class: 'grader-tampering',
  languages: ['javascript'],
  why: 'submits JSON whose __proto__ and constructor.prototype keys claim a perfect score, for a JavaScript grader that parses the submission and merges or spreads it into its own objects',
  commands: [
    String.raw`printf '{"__proto__": {"score": 1, "passed": true, "ok": true, "isAdmin": true}, "constructor": {"prototype": {"score": 1, "passed": true}}, "score": 1, "passed": 60, "total": 60}\n' > {{submission}}; cat {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
