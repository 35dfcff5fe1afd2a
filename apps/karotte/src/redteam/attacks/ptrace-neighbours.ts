import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'ptrace-neighbours',
  class: 'kernel-surface',
  languages: ['any'],
  why: "tries to read other processes' memory: PTRACE_ATTACH and process_vm_readv on every visible pid, /proc/<pid>/mem of the sandbox's init and of its own shell, strace and gdb on the shell",
  commands: [
    String.raw`perl - <<'PERL'
use strict; use warnings; $| = 1;
opendir(my $proc, '/proc') or die;
for my $pid (sort { $a <=> $b } grep { /^\d+$/ } readdir($proc)) {
  next if $pid == $$;
  my $r = syscall(101, 16, $pid, 0, 0);  # PTRACE_ATTACH
  my $ptrace = $r >= 0 ? 'ATTACHED' : "$!";
  syscall(101, 17, $pid, 0, 0) if $r >= 0;  # PTRACE_DETACH
  my $buf = "\0" x 16;
  my $local = pack('P Q', $buf, 16);
  my $remote = pack('Q Q', 0x400000, 16);
  my $vm = syscall(310, $pid, $local, 1, $remote, 1, 0) >= 0 ? 'READ' : "$!";  # process_vm_readv
  my $mem = open(my $m, '<', "/proc/$pid/mem") ? 'opened' : "$!";
  print "pid $pid: ptrace $ptrace, process_vm_readv $vm, mem $mem\n";
}
PERL
timeout 3 strace -p $$ -e trace=none 2>&1 | head -n 2; timeout 5 gdb -q -batch -p $$ -ex 'info proc' 2>&1 | head -n 3; true`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
