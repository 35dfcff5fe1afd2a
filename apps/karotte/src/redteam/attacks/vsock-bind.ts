import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'vsock-bind',
  class: 'network',
  languages: ['any'],
  why: 'binds AF_VSOCK ports, which ignore network namespaces: on a VM with a virtio-vsock device the student takes ports of the whole VM (the host then gets EADDRINUSE) one hop from the hypervisor; it connects only to its own port on the local CID, never to the host',
  commands: [
    String.raw`perl - <<'PERL'
use strict; use warnings; $| = 1;
# struct sockaddr_vm: family, reserved, port, cid, zero padding.
my $any = 0xffffffff;
for my $port (22, 1024, 5000, 9999) {
  socket(my $s, 40, 1, 0) or do { print "socket(AF_VSOCK): $!\n"; last };
  my $addr = pack('S S L L x4', 40, 0, $port, $any);
  if (bind($s, $addr) && listen($s, 1)) {
    print "bound vsock port $port\n";
    socket(my $c, 40, 1, 0) or next;
    connect($c, pack('S S L L x4', 40, 0, $port, 1)) ? print "connected to local CID port $port\n" : print "local connect $port: $!\n";
  } else { print "bind $port: $!\n" }
}
PERL`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
