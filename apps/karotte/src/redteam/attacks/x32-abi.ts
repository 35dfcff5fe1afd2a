import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'x32-abi',
  class: 'kernel-surface',
  languages: ['any'],
  why: 'calls the kernel through the x32 ABI (syscall numbers with bit 30 set) and asks for foreign personalities, where a filter written for x86-64 numbers would not look',
  commands: [
    String.raw`perl -e 'syscall(39 | 0x40000000)'; echo "x32 getpid: status $?"; perl -e 'syscall(101 | 0x40000000, 0, 0, 0, 0)'; echo "x32 ptrace: status $?"; perl -e '$| = 1; for my $p (0x0008, 0x0400008, 0x0004, 0x0006) { my $r = syscall(135, $p); printf "personality 0x%x: %s\n", $p, $r == -1 ? $! : "ALLOWED"; syscall(135, 0) }'`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
