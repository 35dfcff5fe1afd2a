import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'hard-link-root-file',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'hard-links a root-owned file (the shadow file, a root-owned binary) at the submission path',
  commands: [
    String.raw`rm -rf {{submission}}; ln /etc/shadow {{submission}} 2>&1 || ln /etc/passwd {{submission}} 2>&1 || ln "$(command -v bash)" {{submission}} 2>&1; ls -la {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['HARD_LINK', 'graded'],
});
