import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'neighbour-tmpfs-fill',
  class: 'noisy-neighbour',
  languages: ['any'],
  why: 'fills /dev/shm and /tmp, which are RAM, up to its memory limit and holds them while an honest episode runs beside it',
  commands: [
    String.raw`( head -c 4000000000 /dev/zero > /dev/shm/fill; head -c 4000000000 /dev/zero > /tmp/fill; sleep 6 ) >/dev/null 2>&1 & sleep 2; du -sh /dev/shm /tmp 2>/dev/null`,
    String.raw`sleep 6; echo held; cat /proc/sys/fs/file-nr 2>/dev/null`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded', 'MEMORY_LIMIT'],
});
