import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'disk-fill',
  class: 'resource-exhaustion',
  languages: ['any'],
  why: 'fallocates 50 GB and then dd-fills the working directory',
  commands: [
    String.raw`fallocate -l 50G fill 2>&1; dd if=/dev/zero of=fill2 bs=1M count=100000 2>&1 | tail -n 1; df -h . 2>&1 | tail -n 1`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['DISK_LIMIT'],
});
