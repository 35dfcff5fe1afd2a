import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'ipc-carry',
  class: 'cross-episode-channels',
  languages: ['any'],
  why: 'an honest episode leaves its answer in a world-readable SysV shared memory segment and message queue under a fixed key; a later episode opens the same key and reads it',
  seed: [
    String.raw`perl - {{submission}} <<'PERL'
use strict; use warnings; $| = 1;
open(my $a, '<', $ARGV[0]) or die "open: $!\n";
my $answer = substr(do { local $/; <$a> }, 0, 4000);
my $key = 0x4b415254;
my $shm = shmget($key, 4096, 01000 | 0666);
if (defined $shm) { shmwrite($shm, pack('N', length $answer) . $answer, 0, 4096) or print "shmwrite: $!\n"; print "segment $shm\n" } else { print "shmget: $!\n" }
my $q = msgget($key, 01000 | 0666);
if (defined $q) { msgsnd($q, pack('l!', 1) . $answer, 04000) or print "msgsnd: $!\n"; print "queue $q\n" } else { print "msgget: $!\n" }
PERL`,
  ],
  commands: [
    String.raw`perl - {{submission}} <<'PERL'
use strict; use warnings; $| = 1;
my $key = 0x4b415254;
my $answer;
my $shm = shmget($key, 0, 0);
if (defined $shm && shmread($shm, my $data, 0, 4096)) { my $n = unpack('N', $data); $answer = substr($data, 4, $n) if $n > 0 && $n < 4092 }
else { print "no segment: $!\n" }
my $q = msgget($key, 0);
if (!defined $answer && defined $q && msgrcv($q, my $msg, 4096, 0, 04000)) { $answer = substr($msg, length(pack('l!', 0))) }
if (defined $answer) { open(my $o, '>', $ARGV[0]) or die; print $o $answer; print "carried over\n" } else { print "nothing carried over\n" }
PERL
cat {{submission}} 2>/dev/null | head -c 100`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
