# A loopback TCP flood for tests (kernel-memory.integration.test.ts), run inside a group as a
# test uid: <connections> pairs on 127.0.0.1, both ends in this process; the senders write
# without pause for <seconds> while the receivers never read, so the kernel holds every byte
# in socket buffers. Prints "sent <bytes>" and holds the buffers until killed (at most 120 s).
use strict;
use warnings;
use IO::Socket::INET;

my ($count, $seconds) = @ARGV;
die "usage: tcp-flood.pl <connections> <seconds>\n" unless defined $seconds;
my $listener = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1024, ReuseAddr => 1)
  or die "listen: $!\n";
my $port = $listener->sockport;
my (@senders, @receivers);
for (1 .. $count) {
  my $sender = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die "connect: $!\n";
  my $receiver = $listener->accept or die "accept: $!\n";
  $sender->blocking(0);
  push @senders, $sender;
  push @receivers, $receiver;
}
my $chunk = 'x' x 65536;
my $deadline = time + $seconds;
my $sent = 0;
while (time < $deadline) {
  my $progress = 0;
  for my $sender (@senders) {
    my $n = syswrite($sender, $chunk);
    if (defined $n) { $sent += $n; $progress = 1; }
  }
  select(undef, undef, undef, 0.01) unless $progress;
}
$| = 1;
print "sent $sent\n";
sleep 120;
