# The setup's mounter (perl, as root in the new mount namespace, a coprocess of
# programs/setup.sh): every mount of the setup is one mount(2) here, where it was one mount(8)
# process each. Requests on stdin, four NUL-terminated fields each: source, target, file
# system type ('' for none), options as mount(8) takes them (ro, nosuid, nodev, noexec, bind,
# remount are flags, anything else is the file system's data). Each answer is one line: "ok"
# or "error: <why>". Exits at the end of its input.
use strict;
use warnings;
my %flag = (ro => 1, nosuid => 2, nodev => 4, noexec => 8, remount => 32, bind => 4096);
my $ATTRS = 1 | 2 | 4 | 8;
$| = 1;
$/ = "\0";
# mount(source, target, type, flags, data): syscall 165 on x86-64. A '' or undef pointer is NULL.
sub mnt {
  my ($source, $target, $type, $flags, $data) = @_;
  return syscall(165, $source // 0, $target, $type // 0, $flags, $data // 0) == 0;
}
while (defined(my $source = <STDIN>)) {
  my @request = ($source);
  for (1 .. 3) {
    my $field = <STDIN>;
    exit 1 unless defined $field;
    push @request, $field;
  }
  chomp @request;
  my ($src, $target, $type, $options) = @request;
  my ($flags, @data) = (0);
  for my $option (split /,/, $options) {
    if (exists $flag{$option}) { $flags |= $flag{$option} }
    elsif ($option ne 'rw') { push @data, $option }
  }
  my $data = @data ? join(',', @data) : undef;
  my $ok;
  if (($flags & $flag{bind}) && !($flags & $flag{remount})) {
    # A bind, then its flags on the new mount (as mount --bind -o does): a bind takes none itself.
    $ok = mnt($src, $target, undef, $flag{bind}, undef);
    $ok &&= mnt(undef, $target, undef, $flag{remount} | $flag{bind} | ($flags & $ATTRS), undef)
      if ($flags & $ATTRS) != 0;
  } else {
    $ok = mnt($src eq '' ? undef : $src, $target, $type eq '' ? undef : $type, $flags, $data);
  }
  print $ok ? "ok\n" : "error: mount $target ($options): $!\n";
}
