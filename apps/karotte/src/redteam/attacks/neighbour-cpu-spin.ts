import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'neighbour-cpu-spin',
  class: 'noisy-neighbour',
  languages: ['any'],
  why: 'spins two busy loops per CPU while an honest episode runs beside it: the neighbour may be slower, but must pass with the same score',
  commands: [
    String.raw`for i in $(seq 1 $(( $(nproc) * 2 ))); do timeout 6 sh -c 'while :; do :; done' & done; echo spinning`,
    String.raw`sleep 6; echo held; cat /proc/sys/fs/file-nr 2>/dev/null`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded'],
});
