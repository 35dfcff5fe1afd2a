import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'neighbour-pids-fill',
  class: 'noisy-neighbour',
  languages: ['any'],
  why: "takes every process slot its limit allows, each process sleeping, while an honest episode runs beside it: the limit is the attacker's own, and the neighbour must be able to start every process it needs",
  commands: [
    String.raw`perl -e '$| = 1; my $hold = shift; my $n = 0; for (1 .. 4000) { my $pid = fork(); last unless defined $pid; if ($pid == 0) { sleep $hold; exit 0 } $n++ } print "$n sleepers: $!\n"' 6 & sleep 1; ps -e --no-headers | wc -l`,
    String.raw`sleep 6; echo held; cat /proc/sys/fs/file-nr 2>/dev/null`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded', 'PIDS_LIMIT'],
});
