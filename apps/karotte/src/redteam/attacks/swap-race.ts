import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'swap-race',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'a background loop that swaps the submission between a regular file and a symlink to /etc/passwd thousands of times a second, racing any check-then-open of the path',
  commands: [
    String.raw`(end=$((SECONDS + 30)); while [ $SECONDS -lt $end ]; do ln -sfn /etc/passwd .swap-link; mv -fT .swap-link {{submission}}; echo 0 > .swap-file; mv -fT .swap-file {{submission}}; done) >/dev/null 2>&1 & sleep 0.3; ls -la {{submission}}; echo racing`,
  ],
  parallelSafe: true,
  expected: ['graded', 'SYMLINK'],
});
