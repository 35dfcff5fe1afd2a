import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'namespace-calls',
  class: 'kernel-surface',
  languages: ['any'],
  why: 'tries every way into new namespaces and mounts (unshare, nsenter into PID 1, raw clone with CLONE_NEWUSER, clone3, setns, mount, fsopen, pivot_root, chroot): a user namespace gives back capabilities, a mount can uncover what the sandbox covered',
  commands: [
    String.raw`unshare -Ur true 2>&1 | head -n 1; unshare -m true 2>&1 | head -n 1; unshare -n true 2>&1 | head -n 1; nsenter -t 1 -a true 2>&1 | head -n 1; /usr/sbin/chroot / /bin/true 2>&1 | head -n 1; perl - <<'PERL'
use strict; use warnings; $| = 1;
sub try { my ($name, $r) = @_; print "$name: ", ($r >= 0 ? 'ALLOWED' : "$!"), "\n" }
try('clone(CLONE_NEWUSER)', my $pid = syscall(56, 0x10000000 | 17, 0, 0, 0, 0)); exit 0 if defined $pid && $pid == 0;
my $args = pack('Q11', 0x10000000, (0) x 10);
my $c3 = syscall(435, $args, 88); exit 0 if $c3 == 0; try('clone3', $c3);
try('unshare(CLONE_NEWNS)', syscall(272, 0x00020000));
for my $ns (qw(mnt pid net user ipc uts cgroup)) { open(my $f, '<', "/proc/1/ns/$ns") or do { print "open /proc/1/ns/$ns: $!\n"; next }; try("setns $ns", syscall(308, fileno($f), 0)) }
# syscall() passes strings as pointers: variables, never literals.
my ($none, $tmp, $tmpfs, $proc) = ('none', '/tmp', 'tmpfs', '/proc');
try('mount tmpfs', syscall(165, $none, $tmp, $tmpfs, 0, 0));
try('fsopen tmpfs', syscall(430, $tmpfs, 0));
try('pivot_root', syscall(155, $tmp, $tmp));
try('umount2 /proc', syscall(166, $proc, 2));
PERL`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
