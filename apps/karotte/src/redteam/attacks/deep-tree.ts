import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'deep-tree',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'replaces the submission with a directory nested 40 deep',
  commands: [
    String.raw`rm -rf {{submission}}; mkdir -p {{submission}} && cd {{submission}} && for i in $(seq 1 40); do mkdir d && cd d; done; cd ~ 2>/dev/null || cd /; pwd`,
  ],
  parallelSafe: true,
  expected: ['TOO_DEEP'],
});
