import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'symlink-proc-self',
  class: 'custody-tricks',
  languages: ['any'],
  why: "makes the submission a symlink into /proc/self, so the reader's own environment is read",
  commands: [
    String.raw`rm -rf {{submission}}; ln -s /proc/self/environ {{submission}}; ls -la {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['SYMLINK'],
});
