import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'raw-sockets',
  class: 'network',
  languages: ['any'],
  why: 'opens raw and exotic sockets (AF_PACKET, raw ICMP, ICMP datagram, AF_ALG, AF_KEY, AF_BLUETOOTH, AF_XDP, every netlink family) without sending anything: the families a network namespace does not cover, or that reach kernel code no task needs',
  commands: [
    String.raw`perl - <<'PERL'
use strict; use warnings; $| = 1;
my @tries = ([17, 3, 0x0300, 'AF_PACKET raw'], [2, 3, 1, 'AF_INET raw ICMP'], [2, 2, 1, 'AF_INET ICMP datagram'],
  [38, 5, 0, 'AF_ALG'], [15, 3, 2, 'AF_KEY'], [31, 3, 0, 'AF_BLUETOOTH'], [44, 3, 0, 'AF_XDP'], [40, 1, 0, 'AF_VSOCK'],
  [4, 2, 0, 'AF_IPX'], [9, 5, 0, 'AF_X25'], [29, 3, 1, 'AF_CAN'], [21, 1, 0, 'AF_RDS'], [36, 2, 0, 'AF_IEEE802154']);
push @tries, map { [16, 3, $_, "AF_NETLINK protocol $_"] } 0 .. 31;
for my $t (@tries) {
  my ($family, $type, $protocol, $name) = @$t;
  my $fd = syscall(41, $family, $type, $protocol);
  print "$name: ", ($fd >= 0 ? 'OPENED' : "$!"), "\n";
  POSIX::close($fd) if $fd >= 0 && eval { require POSIX };
}
PERL`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
