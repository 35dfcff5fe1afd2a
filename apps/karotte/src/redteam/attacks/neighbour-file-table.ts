import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'neighbour-file-table',
  class: 'noisy-neighbour',
  languages: ['any'],
  why: "fills the host's file table from 200 processes holding 1,000 open files each (200,000 in all, within pids x nofile) while an honest episode runs beside it: a neighbour that gets ENFILE must still pass, never end in error",
  commands: [
    String.raw`cat /proc/sys/fs/file-nr; perl -e '$| = 1; my $hold = shift; my @kids; for my $k (1 .. 200) { my $pid = fork(); last unless defined $pid; if ($pid == 0) { my @f; for (1 .. 1000) { open(my $h, "<", "/dev/null") or last; push @f, $h } sleep $hold; exit 0 } push @kids, $pid } print scalar(@kids), " holders\n"' 6 & sleep 3; cat /proc/sys/fs/file-nr`,
    String.raw`sleep 6; echo held; cat /proc/sys/fs/file-nr 2>/dev/null`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded', 'PIDS_LIMIT'],
});
