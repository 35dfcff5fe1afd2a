import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'patched-runner',
  class: 'test-tricks',
  languages: ['javascript'],
  why: 'patches JSON, console and process.stdout from the submission to print an all-passing report',
  commands: [
    String.raw`printf 'const pass = JSON.stringify(Array.from({length: 1000}, () => ({ ok: "nope", passed: true })));\nJSON.stringify = () => pass; JSON.parse = () => ({ score: 1 });\nconst w = process.stdout.write.bind(process.stdout); process.stdout.write = () => w(pass);\nconsole.log = () => w("1 passed, 0 failed");\nexport function toRoman() { return "nope"; }\n' > {{submission}}; cat {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
