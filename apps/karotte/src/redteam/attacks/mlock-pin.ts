import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'mlock-pin',
  class: 'uncharged-memory',
  languages: ['any'],
  why: 'tries to lock 256 MiB into RAM (mmap MAP_LOCKED|MAP_POPULATE, then mlockall): locked memory cannot be reclaimed or swapped, so it must stay within RLIMIT_MEMLOCK',
  commands: [
    String.raw`ulimit -l unlimited 2>&1; ulimit -l; perl -e '$| = 1; my $len = 256 << 20; my $a = syscall(9, 0, $len, 3, 0x22 | 0x2000 | 0x8000, -1, 0); print $a == -1 ? "mmap MAP_LOCKED: $!\n" : "locked $len bytes\n"; my $r = syscall(151, 3); print $r == -1 ? "mlockall: $!\n" : "mlockall ok\n"; sleep 3 if $a != -1'`,
  ],
  parallelSafe: false,
  expected: ['graded', 'MEMORY_LIMIT'],
});
