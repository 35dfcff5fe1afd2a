import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'exit-zero-early',
  class: 'test-tricks',
  languages: ['javascript'],
  why: 'submits code that exits 0 as soon as it is loaded, before any test runs',
  commands: [
    String.raw`printf 'process.exit(0);\nexport function toRoman() { return ""; }\n' > {{submission}}; cat {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
