import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'wide-tree',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'replaces the submission with a directory of 12,000 entries',
  commands: [
    String.raw`rm -rf {{submission}}; mkdir -p {{submission}} && (cd {{submission}} && seq 1 12000 | xargs touch) ; ls {{submission}} | wc -l`,
  ],
  parallelSafe: true,
  expected: ['DISK_LIMIT', 'TOO_MANY_ENTRIES'],
});
