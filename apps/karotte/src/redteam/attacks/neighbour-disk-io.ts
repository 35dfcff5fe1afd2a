import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'neighbour-disk-io',
  class: 'noisy-neighbour',
  languages: ['any'],
  why: "rewrites a 16 MiB file with fsync after every write, within its own quota, while an honest episode runs beside it: the host's disk queue is shared, the neighbour's verdict is not",
  commands: [
    String.raw`( end=$((SECONDS + 6)); while [ $SECONDS -lt $end ]; do dd if=/dev/zero of=io.fill bs=1M count=16 conv=fsync oflag=sync 2>/dev/null; sync; done ) & echo writing`,
    String.raw`sleep 6; echo held; cat /proc/sys/fs/file-nr 2>/dev/null`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded', 'DISK_LIMIT'],
});
