import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'inode-flood',
  class: 'resource-exhaustion',
  languages: ['any'],
  why: 'creates files until the inode quota is gone',
  commands: [
    String.raw`mkdir -p many && cd many && seq 1 400000 | xargs touch 2>&1 | tail -n 1; ls | wc -l; cd ..`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['DISK_LIMIT'],
});
