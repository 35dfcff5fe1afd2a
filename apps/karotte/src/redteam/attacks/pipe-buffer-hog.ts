import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'pipe-buffer-hog',
  class: 'uncharged-memory',
  languages: ['any'],
  why: 'creates 500 pipes, grows each to 1 MiB (F_SETPIPE_SZ) and fills them without reading: pipe buffers are kernel memory, bounded per user, charged only where kernel memory accounting is on',
  commands: [
    String.raw`perl - <<'PERL'
use strict; use warnings; use Fcntl; $| = 1;
my (@pipes, $bytes);
my $chunk = "\0" x 65536;
for my $i (1 .. 500) {
  my ($r, $w);
  pipe($r, $w) or do { print "pipe $i: $!\n"; last };
  fcntl($w, 1031, 1 << 20);
  my $flags = fcntl($w, F_GETFL, 0);
  fcntl($w, F_SETFL, $flags | O_NONBLOCK);
  while (1) { my $n = syswrite($w, $chunk); last unless defined $n && $n > 0; $bytes += $n; }
  push @pipes, [$r, $w];
}
print scalar(@pipes), " pipes holding ", int($bytes / 1048576), " MiB\n";
sleep 2;
PERL`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded', 'MEMORY_LIMIT'],
});
