import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'symlink-parent',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'moves the working directory content away and replaces a parent of the submission with a symlink',
  commands: [
    String.raw`d=$(dirname {{submission}}); if [ "$d" = . ]; then mkdir -p .k && ln -sfn / .k/root && echo "no parent to swap"; else rm -rf "$d" && ln -s / "$d"; fi; ls -la`,
  ],
  parallelSafe: true,
  expected: ['SYMLINK', 'graded'],
});
