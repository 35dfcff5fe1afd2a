import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'memfd-hog',
  class: 'resource-exhaustion',
  languages: ['any'],
  why: 'fills an anonymous memfd_create file, memory that no filesystem quota sees and that lives as long as a descriptor to it, up to 4 GiB',
  commands: [
    String.raw`perl -e '$| = 1; my $name = "karotte"; my $fd = syscall(319, $name, 0); die "memfd_create: $!\n" if $fd < 0; open(my $f, ">&=", $fd) or die "fdopen: $!\n"; my $mb = "\0" x (1 << 20); my $n = 0; while ($n < 4096 && syswrite($f, $mb)) { $n++ } print "wrote $n MiB: $!\n"; sleep 3'; echo "exit $?" `,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['MEMORY_LIMIT'],
});
