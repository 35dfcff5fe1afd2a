import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'symlink-dev-zero',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'makes the submission a symlink to /dev/zero, an endless file',
  commands: [String.raw`rm -rf {{submission}}; ln -s /dev/zero {{submission}}; ls -la {{submission}}`],
  parallelSafe: true,
  expected: ['SYMLINK'],
});
