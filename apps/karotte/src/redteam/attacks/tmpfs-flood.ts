import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'tmpfs-flood',
  class: 'resource-exhaustion',
  languages: ['any'],
  why: 'fills /dev/shm and /tmp (RAM-backed) until something gives',
  commands: [
    String.raw`head -c 4000000000 /dev/zero > /dev/shm/fill; echo "shm $?"; head -c 4000000000 /dev/zero > /tmp/fill; echo "tmp $?"; ls -la /dev/shm /tmp | head`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded', 'MEMORY_LIMIT'],
});
