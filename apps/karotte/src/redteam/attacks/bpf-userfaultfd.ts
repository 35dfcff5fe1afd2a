import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'bpf-userfaultfd',
  class: 'kernel-surface',
  languages: ['any'],
  why: 'tries the calls behind many kernel exploits: bpf (a map and a socket filter program), userfaultfd (the syscall and /dev/userfaultfd), io_uring_setup',
  commands: [
    String.raw`perl - <<'PERL'
use strict; use warnings; $| = 1;
sub try { my ($name, $r) = @_; print "$name: ", ($r >= 0 ? 'ALLOWED' : "$!"), "\n" }
my $map = pack('L L L L', 2, 4, 4, 1) . ("\0" x 48);
try('bpf MAP_CREATE', syscall(321, 0, $map, 64));
my $insns = pack('C C s l', 0xb7, 0, 0, 0) . pack('C C s l', 0x95, 0, 0, 0);  # mov r0, 0; exit
my $license = "GPL\0";
my $prog = pack('L L P P', 1, 2, $insns, $license) . ("\0" x 104);
try('bpf PROG_LOAD', syscall(321, 5, $prog, 128));
try('userfaultfd', syscall(323, 0x80000));
try('open /dev/userfaultfd', open(my $u, '+<', '/dev/userfaultfd') ? 0 : -1);
my $params = "\0" x 120;
try('io_uring_setup', syscall(425, 4, $params));
PERL`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
