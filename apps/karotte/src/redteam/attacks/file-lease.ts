import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'file-lease',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'takes a write lease on the submission (fcntl F_SETLEASE) from a background process, so that whoever opens it later blocks for the lease-break time (45 s) unless it opens without blocking',
  commands: [
    String.raw`echo 0 > {{submission}}; perl -e 'use Fcntl; $| = 1; open(my $f, "+<", $ARGV[0]) or die "open: $!"; fcntl($f, 1024, F_WRLCK) or die "F_SETLEASE: $!"; print "lease held\n"; sleep 60' {{submission}} & sleep 0.5; cat /proc/locks 2>/dev/null | head -n 5; echo started`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
