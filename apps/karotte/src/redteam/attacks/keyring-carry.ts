import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'keyring-carry',
  class: 'cross-episode-channels',
  languages: ['any'],
  why: 'an honest episode stores its answer as a kernel key readable by anyone (user and persistent keyrings, permissions 0x3f3f3f3f), and a later episode under another uid finds it in /proc/keys and reads it: keys are by uid, outlive the episode and nothing reclaims them',
  seed: [
    String.raw`perl - {{submission}} <<'PERL'
use strict; use warnings; $| = 1;
open(my $f, '<', $ARGV[0]) or die "open: $!\n";
my $answer = do { local $/; <$f> };
# syscall() passes strings as pointers the kernel may write: variables, never literals.
my ($type, $description) = ('user', 'karotte-carry');
for my $ring (-4, -3) {  # KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING
  my $id = syscall(248, $type, $description, $answer, length($answer), $ring);
  if ($id < 0) { print "add_key: $!\n"; next }
  syscall(250, 5, $id, 0x3f3f3f3f);  # KEYCTL_SETPERM: everything for everyone
  syscall(250, 15, $id, 300);  # KEYCTL_SET_TIMEOUT: gone in 5 minutes even if nothing reclaims it
  print "key $id in ring $ring\n";
}
my $persistent = syscall(250, 22, -1, -4);  # KEYCTL_GET_PERSISTENT
if ($persistent < 0) { print "persistent keyring: $!\n" }
else {
  my $id = syscall(248, $type, $description, $answer, length($answer), $persistent);
  syscall(250, 5, $id, 0x3f3f3f3f) if $id >= 0;
  syscall(250, 15, $id, 300) if $id >= 0;
  print "persistent key $id\n";
}
PERL`,
  ],
  commands: [
    String.raw`perl - {{submission}} <<'PERL'
use strict; use warnings; $| = 1;
open(my $keys, '<', '/proc/keys') or die "/proc/keys: $!\n";
while (my $line = <$keys>) {
  next unless $line =~ /karotte-carry/;
  my $id = hex((split ' ', $line)[0]);
  my $buffer = "\0" x 65536;
  my $n = syscall(250, 11, $id, $buffer, 65536);  # KEYCTL_READ
  if ($n < 0) { print "read key $id: $!\n"; next }
  open(my $out, '>', $ARGV[0]) or die "write: $!\n";
  print $out substr($buffer, 0, $n);
  print "carried over from key $id\n";
  exit 0;
}
print "no key from an earlier episode\n";
PERL
cat {{submission}} 2>/dev/null | head -c 100`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
