import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'ipc-flood',
  class: 'host-global-pools',
  languages: ['any'],
  why: "creates SysV message queues, semaphore sets and shared memory ids until the kernel's limits (msgmni, semmni, shmmni): host-wide pools unless the IPC namespace is the episode's own, and objects that outlive their creator",
  commands: [
    String.raw`perl -e '$| = 1; my %n; for (1 .. 40000) { defined msgget(0, 01000 | 0600) or last; $n{msg}++ } for (1 .. 40000) { defined semget(0, 1, 01000 | 0600) or last; $n{sem}++ } for (1 .. 5000) { defined shmget(0, 4096, 01000 | 0600) or last; $n{shm}++ } print join(" ", map { "$_=$n{$_}" } sort keys %n), " ($!)\n"'; ipcs -u 2>/dev/null | head -n 12`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded', 'UNRECLAIMABLE'],
});
