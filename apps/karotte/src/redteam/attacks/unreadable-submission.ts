import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'unreadable-submission',
  class: 'custody-tricks',
  languages: ['any'],
  why: "writes the submission and takes every permission away from it (chmod 000), hoping the harness's read fails with EACCES and the run turns into error instead of failed",
  commands: [
    String.raw`echo 0 > {{submission}}; chmod 000 {{submission}}; ls -la {{submission}}; cat {{submission}} 2>&1 | head -n 1`,
  ],
  parallelSafe: true,
  expected: ['graded', 'UNREADABLE'],
});
