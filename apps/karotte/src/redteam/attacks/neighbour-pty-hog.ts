import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'neighbour-pty-hog',
  class: 'noisy-neighbour',
  languages: ['any'],
  why: "holds every pty it can open while an honest episode runs beside it: on a shared devpts the neighbour's own terminals would fail",
  commands: [
    String.raw`perl -e '$| = 1; my $hold = shift; my @p; for (1 .. 4096) { open(my $f, "+<", "/dev/ptmx") or last; push @p, $f } print "holding ", scalar(@p), " ptys\n"; sleep $hold' 6 & sleep 1; ls /dev/pts | wc -l`,
    String.raw`sleep 6; echo held; cat /proc/sys/fs/file-nr 2>/dev/null`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded'],
});
