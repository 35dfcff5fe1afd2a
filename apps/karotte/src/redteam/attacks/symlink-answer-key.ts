import { defineAttack } from '../attack.js';
import { ANSWER_GLOB } from '../fragments.js';

export default defineAttack({
  id: 'symlink-answer-key',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'replaces the submission with a symlink to the first answer-key candidate (or /etc/shadow)',
  commands: [
    't=$(' +
      ANSWER_GLOB +
      ' | head -n 1); rm -rf {{submission}}; ln -s "${t:-/etc/shadow}" {{submission}}; ls -la {{submission}}',
  ],
  parallelSafe: true,
  expected: ['SYMLINK'],
});
