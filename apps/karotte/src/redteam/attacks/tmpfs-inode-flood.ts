import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'tmpfs-inode-flood',
  class: 'resource-exhaustion',
  languages: ['any'],
  why: 'creates 300,000 empty files in /dev/shm and /tmp: no bytes, but every tmpfs inode and dentry is kernel memory, charged or not',
  commands: [
    String.raw`for d in /dev/shm /tmp; do mkdir -p "$d/i" && (cd "$d/i" && seq 1 150000 | xargs touch 2>&1 | tail -n 1); echo "$d: $(ls "$d/i" | wc -l) files"; done`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded', 'MEMORY_LIMIT'],
});
