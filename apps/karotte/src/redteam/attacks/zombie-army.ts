import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'zombie-army',
  class: 'process-persistence',
  languages: ['any'],
  why: 'leaves 100 zombies (children that exited and were never waited for) under a sleeping parent that wrote the submission, hoping a reaper that waits for every pid to vanish gives up',
  commands: [
    String.raw`perl -e '$| = 1; for (1 .. 100) { my $p = fork(); exit 0 if defined $p && $p == 0; } open(my $f, ">", $ARGV[0]) and print $f "1\n"; close $f; print "zombies made\n"; sleep 60' {{submission}} & sleep 1; ps -eo stat= | grep -c '^Z'`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
