# Populate the world's own /dev (perl, as root in the new mount namespace, see
# ../confinement/plan.ts): the device nodes programs need and nothing else, the usual links,
# and the directories the private devpts and /dev/shm mount on. Argument: the /dev tmpfs.
use strict;
use warnings;
my $dev = shift @ARGV;
my %nodes = (null => [1, 3], zero => [1, 5], full => [1, 7], random => [1, 8], urandom => [1, 9], tty => [5, 0]);
for my $name (sort keys %nodes) {
  my ($major, $minor) = @{ $nodes{$name} };
  my $path = "$dev/$name";
  my $number = (($major & 0xfff) << 8) | ($minor & 0xff) | (($minor & ~0xff) << 12);
  # mknod(path, S_IFCHR | 0666, makedev(major, minor)): syscall 133 on x86-64.
  syscall(133, $path, 0020666, $number) == 0 or die "karotte-dev: mknod $path: $!\n";
  chmod(0666, $path) or die "karotte-dev: chmod $path: $!\n";
}
for my $dir (['pts', 0755], ['shm', 01777]) {
  my ($name, $mode) = @$dir;
  mkdir("$dev/$name") or die "karotte-dev: mkdir $dev/$name: $!\n";
  chmod($mode, "$dev/$name") or die "karotte-dev: chmod $dev/$name: $!\n";
}
my %links = (fd => '/proc/self/fd', stdin => '/proc/self/fd/0', stdout => '/proc/self/fd/1',
  stderr => '/proc/self/fd/2', ptmx => 'pts/ptmx');
for my $name (sort keys %links) {
  symlink($links{$name}, "$dev/$name") or die "karotte-dev: symlink $dev/$name: $!\n";
}
