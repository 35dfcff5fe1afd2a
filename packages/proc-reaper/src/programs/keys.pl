# The kernel-keyring sweep (see ../keys.ts), run by perl AS THE UID whose keys are reclaimed:
# a keyring is cleared by its owner. It empties the uid's user keyring, its user-session
# keyring and its persistent keyring; a key no keyring links any more is destroyed by the
# kernel. Prints one line per keyring: "cleared <name>" or "failed <name> <errno text>".
# $ARGV[0]: the keyctl syscall number of this architecture.
use strict;
use warnings;

my $keyctl = $ARGV[0];
my $KEYCTL_CLEAR          = 7;
my $KEYCTL_GET_PERSISTENT = 22;
my $KEY_SPEC_PROCESS_KEYRING      = -2;
my $KEY_SPEC_USER_KEYRING         = -4;
my $KEY_SPEC_USER_SESSION_KEYRING = -5;

$| = 1;
sub clear_ring {
  my ($name, $id) = @_;
  if (syscall($keyctl, $KEYCTL_CLEAR, $id) == 0) {
    print "cleared $name\n";
  } else {
    print "failed $name $!\n";
  }
}

clear_ring('user', $KEY_SPEC_USER_KEYRING);
clear_ring('user-session', $KEY_SPEC_USER_SESSION_KEYRING);
# The persistent keyring (kept for days after the uid's last process) is reached by linking it
# into this process's own keyring, which dies with this process.
my $persistent = syscall($keyctl, $KEYCTL_GET_PERSISTENT, -1, $KEY_SPEC_PROCESS_KEYRING);
if ($persistent >= 0) {
  clear_ring('persistent', $persistent);
} elsif ($!{EOPNOTSUPP}) {
  print "absent persistent\n";
} else {
  print "failed persistent $!\n";
}
