import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'huge-file',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'writes a 300 MB submission, past the per-file budget or the disk quota',
  commands: [String.raw`head -c 300000000 /dev/zero > {{submission}}; ls -la {{submission}}`],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['DISK_LIMIT', 'FILE_TOO_LARGE'],
});
