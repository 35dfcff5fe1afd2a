# Install a seccomp filter, then exec the program (perl -e, see ../confinement/syscall-filter.ts).
# Runs as the unprivileged uid, after setpriv set no_new_privs and dropped every capability
# (into an image: every capability but CAP_SYS_CHROOT and CAP_SETPCAP, dropped here first).
# Arguments: the filter (struct sock_filter[] as hex), the root (`-`, or the image's tree to
# chroot into), then the program and its arguments.
use strict;
use warnings;
# Loaded now, from the host: after a chroot into an image the host's modules are out of reach.
use Errno ();
my $hex = shift @ARGV;
my $root = shift @ARGV;
my $filter = pack('H*', $hex);
my $count = length($filter) / 8;
die "karotte-seccomp: bad filter\n" if $count < 1 || $count > 4096 || $count != int($count);
if ($root ne '-') {
  # chroot first (it needs CAP_SYS_CHROOT), then drop both capabilities from the bounding set
  # (PR_CAPBSET_DROP needs CAP_SETPCAP, so CAP_SETPCAP goes last), then empty every set with
  # capset and read them back with capget: nothing of the image runs with a capability.
  chroot($root) or die "karotte-seccomp: chroot: $!\n";
  chdir('/') or die "karotte-seccomp: chdir: $!\n";
  syscall(157, 24, 18, 0, 0, 0) == 0 or die "karotte-seccomp: capbset drop: $!\n";
  syscall(157, 24, 8, 0, 0, 0) == 0 or die "karotte-seccomp: capbset drop: $!\n";
  my $header = pack('LL', 0x20080522, 0);
  my $data = pack('L6', 0, 0, 0, 0, 0, 0);
  syscall(126, $header, $data) == 0 or die "karotte-seccomp: capset: $!\n";
  # PR_CAP_AMBIENT_CLEAR_ALL (the kernel clears ambient with permitted, said once more)
  syscall(157, 47, 4, 0, 0, 0) == 0 or die "karotte-seccomp: ambient clear: $!\n";
  my $check = pack('LL', 0x20080522, 0);
  my $got = "\0" x 24;
  syscall(125, $check, $got) == 0 or die "karotte-seccomp: capget: $!\n";
  die "karotte-seccomp: capabilities left after the drop\n" if $got ne "\0" x 24;
  for my $cap (8, 18) {
    syscall(157, 23, $cap, 0, 0, 0) == 0 or die "karotte-seccomp: capability $cap still bounded\n";
  }
}
# prctl(PR_SET_NO_NEW_PRIVS, 1): already set by setpriv; the kernel refuses a filter without it.
syscall(157, 38, 1, 0, 0, 0) == 0 or die "karotte-seccomp: prctl: $!\n";
# struct sock_fprog { unsigned short len; struct sock_filter *filter; } on x86-64.
my $fprog = pack('S x6 P', $count, $filter);
# seccomp(SECCOMP_SET_MODE_FILTER, 0, &fprog)
syscall(317, 1, 0, $fprog) == 0 or die "karotte-seccomp: seccomp: $!\n";
{ exec { $ARGV[0] } @ARGV }
print STDERR "karotte-seccomp: cannot run $ARGV[0]: $!\n";
exit($!{ENOENT} ? 127 : 126);
