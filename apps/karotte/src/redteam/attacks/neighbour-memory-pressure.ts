import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'neighbour-memory-pressure',
  class: 'noisy-neighbour',
  languages: ['any'],
  why: 'asks for oom_score_adj -1000 (so the kernel would kill someone else first), then keeps a hog growing to its memory limit, killed and restarted, while an honest episode runs beside it: an OOM must land on the hog and never be charged to the neighbour',
  commands: [
    String.raw`echo -1000 > /proc/self/oom_score_adj 2>&1; cat /proc/self/oom_score_adj; ( end=$((SECONDS + 6)); while [ $SECONDS -lt $end ]; do head -c 8000000000 /dev/zero | tail -c 8000000000 > /dev/null; done ) >/dev/null 2>&1 & sleep 1; echo pressing`,
    String.raw`sleep 6; echo held; cat /proc/sys/fs/file-nr 2>/dev/null`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['MEMORY_LIMIT'],
});
