import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'sparse-giant',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'makes the submission a 100 GB sparse file',
  commands: [String.raw`rm -rf {{submission}}; truncate -s 100G {{submission}}; ls -la {{submission}}`],
  parallelSafe: true,
  expected: ['FILE_TOO_LARGE'],
});
