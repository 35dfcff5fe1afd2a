# Install a seccomp filter, then exec the program (perl -e, see ../confinement/syscall-filter.ts).
# Runs as the unprivileged uid, after setpriv set no_new_privs and dropped every capability.
# Arguments: the filter (struct sock_filter[] as hex), then the program and its arguments.
use strict;
use warnings;
my $hex = shift @ARGV;
my $filter = pack('H*', $hex);
my $count = length($filter) / 8;
die "karotte-seccomp: bad filter\n" if $count < 1 || $count > 4096 || $count != int($count);
# prctl(PR_SET_NO_NEW_PRIVS, 1): already set by setpriv; the kernel refuses a filter without it.
syscall(157, 38, 1, 0, 0, 0) == 0 or die "karotte-seccomp: prctl: $!\n";
# struct sock_fprog { unsigned short len; struct sock_filter *filter; } on x86-64.
my $fprog = pack('S x6 P', $count, $filter);
# seccomp(SECCOMP_SET_MODE_FILTER, 0, &fprog)
syscall(317, 1, 0, $fprog) == 0 or die "karotte-seccomp: seccomp: $!\n";
{ exec { $ARGV[0] } @ARGV }
print STDERR "karotte-seccomp: cannot run $ARGV[0]: $!\n";
exit($!{ENOENT} ? 127 : 126);
