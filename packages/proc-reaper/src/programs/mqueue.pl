# The POSIX message-queue sweep (see ../ipc.ts), run by perl as root: in a mount namespace of
# its own (unshared here, every mount made private, so nothing reaches the host's table), a
# fresh mqueue file system mounted over a root-owned directory shows every queue of this IPC
# namespace, whatever is mounted elsewhere. The queues owned by the uid are deleted, then those
# still there are listed. Output: the names deleted, NUL-terminated each, the marker
# "\0karotte/left\0", the names left (a name never holds a '/'). Exit 3: the namespace, the
# mount or the listing failed. One process, where it was unshare, sh, mount and two finds.
# $ARGV[0] mount point, $ARGV[1] uid, $ARGV[2] unshare's and $ARGV[3] mount's syscall numbers.
use strict;
use warnings;

my ($point, $uid, $unshare, $mount) = @ARGV;
my $CLONE_NEWNS = 0x20000;
my $MS_REC      = 0x4000;
my $MS_PRIVATE  = 0x40000;

binmode STDOUT;
$| = 1;
sub fail { print STDERR "$_[0]: $!\n"; exit 3 }
# syscall() hands strings over as buffers the kernel may write: variables, never literals.
my ($root, $source, $type) = ('/', 'karotte-mqueue', 'mqueue');
syscall($unshare + 0, $CLONE_NEWNS) == 0 or fail('unshare');
syscall($mount + 0, 0, $root, 0, $MS_REC | $MS_PRIVATE, 0) == 0 or fail('make / private');
syscall($mount + 0, $source, $point, $type, 0, 0) == 0 or fail("mount mqueue on $point");

sub owned {
  opendir(my $dir, $point) or fail("list $point");
  my @names = grep { $_ ne '.' && $_ ne '..' } readdir $dir;
  closedir $dir;
  return grep { my @st = lstat "$point/$_"; @st && $st[4] == $uid } @names;
}

for my $name (owned()) {
  print "$name\0" if unlink "$point/$name";
}
print "\0karotte/left\0";
print "$_\0" for owned();
