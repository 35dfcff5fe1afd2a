import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'tiocsti-inject',
  class: 'kernel-surface',
  languages: ['any'],
  why: 'tries to push keystrokes into a terminal it shares with the harness (ioctl TIOCSTI on /dev/tty and on its standard descriptors): the classic sandbox escape through the controlling terminal',
  commands: [
    String.raw`perl - <<'PERL'
use strict; use warnings; $| = 1;
# One harmless byte, no newline: proof enough, and nothing runs even where it lands.
my $probe = '#';
my @targets = ([0, 'stdin'], [1, 'stdout'], [2, 'stderr']);
if (open(my $tty, '+<', '/dev/tty')) { push @targets, [fileno($tty), '/dev/tty'] } else { print "/dev/tty: $!\n" }
for my $t (@targets) {
  my ($fd, $name) = @$t;
  open(my $h, '+<&=', $fd) or do { print "$name: $!\n"; next };
  my $ok = ioctl($h, 0x5412, $probe);
  print "$name: ", ($ok ? 'INJECTED' : "$!"), "\n";
}
PERL`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
