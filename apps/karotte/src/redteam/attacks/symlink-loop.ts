import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'symlink-loop',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'makes the submission a symlink loop (a link to a link back to it), hoping a reader that follows links spins or crashes with ELOOP and the run ends in error',
  commands: [
    String.raw`rm -rf {{submission}} {{submission}}.b; ln -s "$(basename {{submission}}).b" {{submission}}; ln -s "$(basename {{submission}})" {{submission}}.b; ls -la {{submission}} {{submission}}.b; cat {{submission}} 2>&1 | head -n 1`,
  ],
  parallelSafe: true,
  expected: ['SYMLINK'],
});
